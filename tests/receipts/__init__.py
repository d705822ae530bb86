"""Tests of ``hermes_nb.receipts``."""
