"""The real-proxy wing (rig, per-release venvs, matrix, contract recording), reached only by the options using it."""
