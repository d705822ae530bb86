"""The wing of the real proxy: the rig (any release's ``hermes proxy start`` on loopback, throwaway credentials),
per-release venvs, the version matrix and contract recording. The rest of the package reaches it only at the options
that use it (``smoke --rig/--hermes-bin/--package``, ``check``/``probe --hermes-bin``, the rig, matrix and contract
commands)."""
