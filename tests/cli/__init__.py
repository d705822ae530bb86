"""Tests of ``hermes_nb.cli``."""
