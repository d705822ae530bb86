"""``hermes-nb``: flags → one library call → print → documented exit code. Nothing imports this layer."""

try:
    from hermes_nb.cli import interrupts as _interrupts

    if _interrupts.is_program():
        _interrupts.install()  # Ctrl-C from here on: one line and exit 130, never a traceback
    from hermes_nb.cli.app import main
except KeyboardInterrupt:  # Ctrl-C while the CLI itself loads
    import sys as _sys

    if "--json" in _sys.argv[1:]:
        print('{"error": "interrupted", "problems": ["interrupted"], "exit_code": 130}', flush=True)
    print("hermes-nb: error: interrupted", file=_sys.stderr, flush=True)
    raise SystemExit(130) from None

__all__ = ["main"]
