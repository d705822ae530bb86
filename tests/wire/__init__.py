"""Tests of ``hermes_nb.wire``."""
