"""``numascope serve --observe --publish-nrt``: a background thread that builds the observed
node's ``NodeResourceTopology`` (``app.services.nrt``) every ``interval`` seconds and, when it
changed, creates or updates it through the Kubernetes API (``app.adapters.nrt_publisher``).
A failure is logged and retried at the next tick; the dashboard keeps running."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from app.services.nodes import NodeService
from app.services.nrt import build_nrt
from app.services.observer import NodeObserver

log = logging.getLogger(__name__)


class NRTLoop:
    def __init__(
        self,
        service: NodeService,
        observer: NodeObserver,
        interval: float,
        publisher: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.service = service
        self.observer = observer
        self.interval = interval
        self._publisher = publisher
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: dict[str, Any] | None = None
        self.last_error: str | None = None

    def publisher(self) -> Callable[[dict[str, Any]], str]:
        if self._publisher is None:
            from app.adapters.nrt_publisher import NRTPublisher, cluster_client

            self._publisher = NRTPublisher(cluster_client()).publish
        return self._publisher

    def tick(self) -> str | None:
        """Publish once if the object changed; returns what the publisher did."""
        obj = build_nrt(self.service.views(self.observer.name))
        if obj == self.last:
            return None
        outcome = self.publisher()(obj)
        self.last = obj
        return outcome

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                outcome = self.tick()
                self.last_error = None
                if outcome:
                    log.info("NodeResourceTopology %s: %s", self.observer.name, outcome)
            except Exception as exc:  # keep serving; try again at the next tick
                self.last_error = str(exc)
                log.warning("NodeResourceTopology %s not published: %s", self.observer.name, exc)
            self._stop.wait(self.interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nrt-publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
