"""Layer 5, receipts: the verdict record, a receipt, its pages, the chained index, verify, shared storage, CI
reports and the promotion gate. Imports nothing that runs notebooks."""
