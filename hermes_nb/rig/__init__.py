"""The real-proxy wing: the rig of any release, per-release venvs, the version matrix, contract recording; the rest of
the package reaches it only at the options that use it (``--rig``, ``--hermes-bin``, ``--package``)."""
