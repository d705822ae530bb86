"""Layer 4, the proxy: adapter check, wire-format probe, reports and contracts, the real-proxy rig,
finding the ``hermes`` executable, telling an emulator from a proxy. Imports core, wire and the emulator."""
