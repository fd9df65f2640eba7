"""The simulated nodes of a process that keeps none (``serve --no-simulated``: the node agent,
which has no database, issue 20 pt 7): ``NoSimulatedNodes`` stands where ``NodeService`` would.

Its reads answer "none" (no names, no summaries, no metrics, no cached answers, nothing that
cannot be made durable); creating a node is ``NoSimulatedNodesError`` (409), and every other
question about a simulated node is ``UnknownNodeError`` (404): there is none by any name.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, NoReturn

from app.services.nodes.errors import NoSimulatedNodesError, UnknownNodeError


class NoSimulatedNodes:
    """No simulated nodes (see the module docstring)."""

    def __init__(self) -> None:
        # Set by the catalog, as on NodeService: whether a name belongs to another kind.
        self.taken: Callable[[str], bool] = lambda name: False
        # NodeService's registry, reads and restarts: none of them holds anything here.
        self.registry = self.reads = self.restarts = self

    def simulated_names(self) -> list[str]:
        return []

    def summaries(self, *, hidden: Collection[str] = ()) -> list[Any]:
        return []

    def metric_samples(
        self, *, hidden: Collection[str] = ()
    ) -> Iterable[tuple[str, dict[str, str], float]]:
        return ()

    def peek_json(self, name: str, *key: str) -> None:
        return None

    def durability_problems(self) -> list[str]:
        return []

    def create(self, name: str, *args: Any, **kwargs: Any) -> NoReturn:
        raise NoSimulatedNodesError(f"create node {name!r}")

    def __getattr__(self, attribute: str) -> Callable[..., NoReturn]:
        def unknown(name: object = "", *args: Any, **kwargs: Any) -> NoReturn:
            raise UnknownNodeError(str(name), ())

        return unknown
