"""Tests of ``hermes_nb.proxy``."""
