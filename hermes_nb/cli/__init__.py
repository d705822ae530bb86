"""``hermes-nb``: flags → one library call → print → documented exit code. Nothing imports this layer."""

from hermes_nb.cli.app import main

__all__ = ["main"]
