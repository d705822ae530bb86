"""One module per ``hermes-nb`` subcommand: ``register(subparsers, parent)``."""
