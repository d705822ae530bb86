"""Tests of ``hermes_nb.harness``."""
