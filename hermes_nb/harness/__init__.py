"""Layer 4, the harness: UH missions, plan, dry run, run and its life cycle, UH's artifact tree and
documents, sandbox, diff capture. Imports core and wire (never the proxy layer)."""
