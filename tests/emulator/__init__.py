"""Tests of ``hermes_nb.emulator``."""
