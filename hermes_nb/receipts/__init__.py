"""Receipts: the verdict record, a receipt, its pages, the chained index, verify, storage, CI reports, promotion."""
