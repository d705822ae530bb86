"""The proxy layer: adapter check, wire-format probe, reports and contracts (the rig is its own wing)."""
