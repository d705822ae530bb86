"""Tests of ``hermes_nb.nbrun``."""
