"""``numascope serve --observe --publish-nrt``: a background thread that builds the observed
node's ``NodeResourceTopology`` (``app.services.nrt``) every ``interval`` seconds and, when it
changed, creates or updates it through the Kubernetes API (``app.adapters.nrt_publisher``).

An unchanged node is still published every ``resync`` seconds (``RESYNC``, node-feature-
discovery's default sleep interval): the publisher reads the object and writes only if it
differs, so an object deleted or edited by someone else is put back without a write per tick.
A failure is logged and retried at the next tick; the dashboard keeps running.

Metrics (on the app's registry): ``numascope_nrt_publish_total{outcome}`` (``created``,
``updated``, ``unchanged``, ``error``) and ``numascope_nrt_last_success_timestamp_seconds``, so
a publisher that keeps failing shows on a dashboard, not only in the log."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from app.services.nodes.source import NodeSource
from app.services.nrt import build_nrt

log = logging.getLogger(__name__)
RESYNC = 60.0


class NRTLoop:
    def __init__(
        self,
        node: NodeSource,
        interval: float,
        publisher: Callable[[dict[str, Any]], str] | None = None,
        *,
        resync: float = RESYNC,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry | None = None,
        fingerprint_method: str = "all",
    ) -> None:
        self.node = node
        self.fingerprint_method = fingerprint_method
        self.interval = interval
        self.resync = resync
        self._clock = clock
        self._publisher = publisher
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: dict[str, Any] | None = None
        self.last_sync: float | None = None
        self.last_error: str | None = None
        self.publishes = Counter(
            "numascope_nrt_publish_total",
            "NodeResourceTopology publishes of the observed node, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.last_success = Gauge(
            "numascope_nrt_last_success_timestamp_seconds",
            "When the NodeResourceTopology was last published or found up to date.",
            registry=registry,
        )

    def publisher(self) -> Callable[[dict[str, Any]], str]:
        if self._publisher is None:
            from app.adapters.nrt_publisher import NRTPublisher, cluster_client, pod_namespace

            publisher = NRTPublisher(cluster_client(), owner_namespace=pod_namespace())
            self._publisher = publisher.publish
        return self._publisher

    def tick(self) -> str | None:
        """Publish once if the object changed or a resync is due; what the publisher did
        (``created``, ``updated``, ``unchanged``), or ``None`` when nothing was asked."""
        obj = build_nrt(self.node.views(), self.fingerprint_method)
        now = self._clock()
        due = self.last_sync is None or now - self.last_sync >= self.resync
        if obj == self.last and not due:
            return None
        try:
            outcome = self.publisher()(obj)
        except Exception:
            self.publishes.labels("error").inc()
            raise
        self.publishes.labels(outcome).inc()
        self.last_success.set_to_current_time()
        self.last = obj
        self.last_sync = now
        return outcome

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                outcome = self.tick()
                self.last_error = None
                if outcome in ("created", "updated"):
                    log.info("NodeResourceTopology %s: %s", self.node.name, outcome)
            except Exception as exc:  # keep serving; try again at the next tick
                self.last_error = str(exc)
                log.warning("NodeResourceTopology %s not published: %s", self.node.name, exc)
            self._stop.wait(self.interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nrt-publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
