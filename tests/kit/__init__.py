"""Tests of ``hermes_nb.kit``."""
