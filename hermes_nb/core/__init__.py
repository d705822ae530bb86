"""Layer 1, the ground floor: errors, the runtime config and its one resolver, the manifest, records,
redaction, and the small shared facts (exit codes, env names, run ids, digests, package data).
Imports nothing of hermes_nb above it."""
