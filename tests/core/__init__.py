"""Tests of ``hermes_nb.core``."""
