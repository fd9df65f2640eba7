"""Typed contracts: one pydantic model per document that crosses a process or API boundary,
with limits, used by the side that writes it and the side that reads it (DESIGN.md §1 "Typed
at the edges", §8). This package imports only pydantic and ``app.domain``.

* ``app.contracts.base``: the limits every contract shares (bounded integers and strings, finite
  numbers, bounded depth and counts) and ``parse``, which turns an answer's bytes into a model
  or a ``ContractError`` naming the field.
* ``app.contracts.summary``: the agent summary v1 (``GET /api/v1/summary``), what the hub trusts.
* ``app.contracts.fleet``: what the hub serves (``/api/v1/fleet``, ``/fleet.json``).
"""
