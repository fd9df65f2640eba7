"""Handlers for the conformance case kinds, one module per engine area.

Each module exports ``HANDLERS: dict[str, Handler]``; ``app.conformance`` collects them.
A handler gets the case and returns the list of mismatches (empty when the case passes).
"""
