"""One module per ``hermes-nb`` command: its docstring, ``HELP``, ``SPEC`` and ``handle`` (or ``ACTIONS``)."""
