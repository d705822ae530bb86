"""Layer 5, receipts: the verdict record, writing a receipt, the chained index, verify, the HTML
render and the promotion gate. Imports core (and nothing that runs notebooks)."""
