"""``hermes-nb``: flags → one library call → print → documented exit code. Nothing imports this layer."""

try:
    from hermes_nb.cli import interrupts as _interrupts

    if _interrupts.is_program():
        _interrupts.install()  # Ctrl-C/SIGTERM from here on: one line and exit 130/143, never a traceback
    from hermes_nb.cli.app import main
except KeyboardInterrupt:  # a signal while the CLI itself loads
    import sys as _sys

    _code = _interrupts.exit_code() if "_interrupts" in globals() else 130
    if "--json" in _sys.argv[1:]:
        print(f'{{"error": "interrupted", "problems": ["interrupted"], "exit_code": {_code}}}', flush=True)
    print("hermes-nb: error: interrupted", file=_sys.stderr, flush=True)
    raise SystemExit(_code) from None

__all__ = ["main"]
