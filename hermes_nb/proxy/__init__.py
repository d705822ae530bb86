"""Layer 4, the proxy: adapter check, wire-format probe, reports and contracts. Imports core, wire and the
emulator (the real-proxy rig is its own wing, :mod:`hermes_nb.rig`)."""
