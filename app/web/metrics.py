"""Prometheus metrics of one app instance (own registry, ``numascope_`` prefix, users.md §5.4).

``AppMetrics`` holds the registry and the series; ``MetricsMiddleware`` counts every HTTP
request by method, route template (never the raw path, to keep cardinality bounded) and
status code. Collectors that read live state at scrape time register on ``registry``.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import __version__

PREFIX = "numascope"

# No ``*_created`` series: they double the exposition and nobody here graphs them.
disable_created_metrics()


class AppMetrics:
    """The registry and series of one app."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.build_info = Gauge(
            f"{PREFIX}_build_info",
            "Numascope build: version and Python version (always 1).",
            ["version", "python_version"],
            registry=self.registry,
        )
        self.build_info.labels(__version__, platform.python_version()).set(1)
        self.http_requests = Counter(
            f"{PREFIX}_http_requests",
            "HTTP requests served, by method, route template and status code.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_duration = Histogram(
            f"{PREFIX}_http_request_duration_seconds",
            "Time to serve an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )
        self.source_errors = Counter(
            f"{PREFIX}_source_errors",
            "Failed reads of a data source.",
            ["source"],
            registry=self.registry,
        )
        for source in ("podresources", "checkpoint", "sysfs", "nrt"):
            self.source_errors.labels(source)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


# Per-node allocation series of users.md §5.4, each with a ``node`` label first because one
# dashboard shows several nodes: series -> (help, label names).
NODE_SERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "cpus": (
        "CPUs of a node per NUMA node and pool (reserved, node_shared, pod_shared, exclusive).",
        ("node", "numa_node", "pool"),
    ),
    "container_exclusive_cpus": (
        "Exclusive CPUs of a container per NUMA node.",
        ("node", "namespace", "pod", "container", "numa_node"),
    ),
    "pod_budget_cpus": (
        "CPUs of a pod-level budget by part (exclusive slices, pod shared pool).",
        ("node", "namespace", "pod", "part"),
    ),
    "numa_memory_bytes": (
        "Memory manager accounting per NUMA node and resource (total, system_reserved, "
        "allocatable, reserved, free).",
        ("node", "numa_node", "resource", "state"),
    ),
}

Sample = tuple[str, dict[str, str], float]


class NodesCollector(Collector):
    """Reads the simulated nodes at scrape time (``samples`` yields ``(series, labels,
    value)`` with series names from ``NODE_SERIES``, without the prefix)."""

    def __init__(self, samples: Callable[[], Iterable[Sample]]) -> None:
        self._samples = samples

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [
            GaugeMetricFamily(f"{PREFIX}_{name}", help_text, labels=list(labels))
            for name, (help_text, labels) in NODE_SERIES.items()
        ]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {
            name: GaugeMetricFamily(f"{PREFIX}_{name}", help_text, labels=list(labels))
            for name, (help_text, labels) in NODE_SERIES.items()
        }
        for name, labels, value in self._samples():
            label_names = NODE_SERIES[name][1]
            families[name].add_metric([labels[n] for n in label_names], value)
        yield from families.values()


def route_label(scope: Scope) -> str:
    """The matched route's template (``/topologies/{name}``), the mount for static files."""
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    if scope.get("endpoint") is not None and "app_root_path" in scope:
        # A Mount (e.g. StaticFiles) put its own prefix into root_path.
        return str(scope.get("root_path") or "mount")
    return "unmatched"


class MetricsMiddleware:
    """Pure ASGI middleware: counts requests and times them."""

    def __init__(self, app: ASGIApp, metrics: AppMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = route_label(scope)
            method = scope.get("method", "")
            self.metrics.http_requests.labels(method, route, str(status)).inc()
            self.metrics.http_duration.labels(method, route).observe(time.perf_counter() - started)
