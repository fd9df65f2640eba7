"""Watch a node: a short token that changes whenever what its page shows changes.

A node page polls ``GET /api/v1/nodes/{node}/watch`` with ``If-None-Match`` (``static/js/
watch.js``); a 304 means "still as shown", a new token means "fetch the page again and swap the
live parts in place". The token is:

* for a **simulated** node, its database record and version (``<record id>-<version>``): every
  admission, removal or reset through any worker, the CLI or the API bumps it, and reading it
  costs one indexed query (the service catches up with the database first);
* for the **observed** node, a digest of its node view (the JSON twin of its page) without the
  times of the observation itself (``observedAt``, ``createdAt``): a new observation of an
  unchanged kubelet gives the same token, while any change the page would show (a pod, a CPU
  set, a memory block, a state file's checksum or verdict, a source's error) gives a new one.
  The digest is computed once per observation (the observer re-observes at most every 2 s)
  and is the same in every worker, since it is built from canonical JSON;
* for a node of the hub's **demo fleet**, a digest of its node view too (it never changes).

Each node gives its own token (``NodeSource.watch_token``); this module says what one is.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from app.services.node_views import NodeView, NodeViews
from app.services.nodes.source import NodeSource

SOURCE_SIMULATED = "simulated"
SOURCE_OBSERVED = "observed"
SOURCE_FLEET = "fleet"

# Keys that say when an observation was made, not what it found.
VOLATILE_KEYS = frozenset({"observedAt", "createdAt"})


@dataclass(frozen=True, slots=True)
class WatchState:
    """What a watcher compares: ``token`` changes exactly when the node's page would."""

    node: str
    source: str
    token: str

    @property
    def etag(self) -> str:
        return f'"{self.token}"'

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "source": self.source, "token": self.token}


def without_keys(value: Any, keys: Collection[str] = VOLATILE_KEYS) -> Any:
    """A JSON value with the members named ``keys`` left out, at every depth."""
    if isinstance(value, dict):
        return {k: without_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without_keys(v, keys) for v in value]
    return value


def view_digest(view: NodeView) -> str:
    """A digest of ``view`` as JSON, observation times left out (same in every process)."""
    data = without_keys(view.model_dump(mode="json", by_alias=True))
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class LastDigest:
    """The digest of a node's latest views (``view_digest``), so that many watchers of one
    observation cost one digest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: NodeViews | None = None
        self._digest = ""

    def of(self, views: NodeViews, build: Callable[[], NodeView]) -> str:
        with self._lock:
            if self._views is views:
                return self._digest
        digest = view_digest(build())
        with self._lock:
            self._views, self._digest = views, digest
        return digest


def watch_state(source: NodeSource) -> WatchState:
    """The node's current token (``UnknownNodeError`` for an unknown node; an observed node
    that cannot be observed is ``ObservedNodeUnavailableError``, like its page)."""
    kind, token = source.watch_token()
    return WatchState(source.name, kind, token)
