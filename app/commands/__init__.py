"""Sub-commands of the ``numascope`` CLI, one module each.

Each module exports ``register(subparsers)`` which adds its parser and sets
``func=<callable(args) -> int>`` as the parser default. Exit codes: 0 ok, 1 problem
found, 2 usage error.
"""
