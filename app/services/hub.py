"""The fleet hub (``numascope serve --hub``): polls the agents' summaries and answers for the
whole fleet from what answered.

Agents come from a static list (``Settings.hub_agents``) and/or every A/AAAA record of a
headless Service (``Settings.hub_agents_dns``, re-resolved every ``DNS_INTERVAL`` seconds; an
address that disappears drops its agent, a failing lookup keeps the agents found before and is
shown as the document's ``discovery.error``). Every agent is polled each
``hub_poll_interval`` seconds in a task of its own (a slow or dead agent delays no other): at
most ``hub_concurrency`` at once, each with its own timeout and size cap
(``app.adapters.agents``), ``If-None-Match`` with the last ETag (an unchanged agent costs a
304), and after a failure an exponential backoff (interval × 2^failures, at most
``MAX_BACKOFF``). Answers are checked field by field (``app.services.fleet_rows``): garbage
makes its agent ``unreachable``, never a 500. Each agent keeps ``status`` (``pending`` until
its first answer, then ``ok`` or ``unreachable``), the error text and when it last answered
(to ``LAST_SEEN_STEP``); its nodes stay listed with the agent's status when it stops
answering. The metrics (agents and nodes by status, poll latency by outcome) are read from the
live state at scrape time.

Pages and JSON read the last poll's results: none waits for an agent. Fit and upgrade fan out
to the agents (each node's own engine decides), bounded by the same concurrency and timeout; a
slow or failing agent gives an ``error`` result for its nodes, never an HTTP error of the hub.
The demo fleet's nodes (``--demo-fleet``) answer in the hub's process (``app.services.demo_fleet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlencode

from prometheus_client import CollectorRegistry, Gauge, Histogram

from app.adapters.agents import AgentClient, AgentError
from app.adapters.dns import DNSLookupError, agent_url, make_resolver, resolve_addresses
from app.domain import deadline
from app.services.agent_summary import Encoded, SummaryCache, encode
from app.services.demo_fleet import DemoFleet, SimulatedNode
from app.services.fleet_rows import (
    check_summary,
    fit_error,
    fit_result,
    fleet_node,
    upgrade_error,
    upgrade_result,
)
from app.settings import Settings, check_dns_target, split_list

log = logging.getLogger(__name__)

DNS_INTERVAL = 5.0
MAX_BACKOFF = 60.0
PENDING, OK, UNREACHABLE = "pending", "ok", "unreachable"
#: The poller's tick: due agents are looked for this often (at most), each polled on its own.
MAX_TICK = 0.5
#: How stale an ``ok`` agent's ``lastSeen`` may be in the fleet document (seconds).
LAST_SEEN_STEP = 10.0


class HubDisabledError(LookupError):
    """A fleet route on a server that is not a hub (404)."""

    def __init__(self) -> None:
        self.message = "this Numascope is not a hub: start it with 'numascope serve --hub'"
        super().__init__(self.message)


@dataclass
class AgentState:
    url: str
    origin: str  # "static" | "dns"
    status: str = PENDING
    error: str | None = "not polled yet"
    last_seen: float | None = None
    etag: str | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0
    next_poll: float = 0.0
    latency: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "status": self.status,
            "error": self.error,
            "lastSeen": _iso(self.last_seen),
        }


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class HubMetrics:
    """Agents up/down, poll latency, nodes by status (registered on the app's registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.agents = Gauge(
            "numascope_hub_agents", "Agents of the hub by status.", ["status"], registry=registry
        )
        self.poll = Histogram(
            "numascope_hub_poll_duration_seconds",
            "Time of one agent poll (summary request), by outcome.",
            ["outcome"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=registry,
        )
        self.nodes = Gauge(
            "numascope_hub_nodes", "Nodes of the fleet by status.", ["status"], registry=registry
        )


class Hub:
    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry,
        *,
        fleet: DemoFleet | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.metrics = HubMetrics(registry)
        self.agents: dict[str, AgentState] = {
            url.rstrip("/"): AgentState(url.rstrip("/"), "static")
            for url in split_list(settings.hub_agents)
        }
        self.dns = check_dns_target(settings.hub_agents_dns) if settings.hub_agents_dns else None
        self.dns_error: str | None = None
        self._dns_at = -DNS_INTERVAL
        self.fleet = fleet if fleet is not None else DemoFleet(settings.demo_fleet)
        self.summaries = SummaryCache()
        self.generation = 0
        self._doc: tuple[int, int, dict[str, Any]] | None = None
        self._client: AgentClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._encoded: tuple[int, int, Encoded] | None = None
        self.polls = 0
        self._bind_metrics()

    # -- lifecycle ----------------------------------------------------------------------
    def client(self) -> AgentClient:
        if self._client is None:
            s = self.settings
            self._client = AgentClient(
                timeout=s.hub_agent_timeout,
                max_bytes=s.hub_max_body_bytes,
                concurrency=s.hub_concurrency,
            )
        return self._client

    def semaphore(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.settings.hub_concurrency)
        return self._semaphore

    async def start(self) -> None:
        self.fleet.start()
        self._task = asyncio.create_task(self._run(), name="hub-poller")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._in_flight.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._client is not None:
            await self._client.aclose()

    async def _run(self) -> None:
        """Each due agent is polled in a task of its own, so a slow or dead agent delays
        nobody else's refresh; the loop only looks for due agents every tick."""
        tick = min(self.settings.hub_poll_interval, MAX_TICK)
        while True:
            try:
                await self._resolve_if_due()
                for agent in self._due():
                    task = asyncio.create_task(self._poll(agent), name=f"poll {agent.url}")
                    self._in_flight[agent.url] = task
                    task.add_done_callback(self._done)
            except Exception:  # a bug in one round must not stop the poller
                log.exception("hub poll failed")
            await asyncio.sleep(tick)

    def _done(self, task: asyncio.Task[None]) -> None:
        for url, t in list(self._in_flight.items()):
            if t is task:
                del self._in_flight[url]

    # -- polling ------------------------------------------------------------------------
    async def _resolve_if_due(self) -> None:
        now = self.clock()
        if self.dns is not None and now - self._dns_at >= DNS_INTERVAL:
            self._dns_at = now
            await self.resolve()

    def _due(self) -> list[AgentState]:
        now = self.clock()
        return [
            a
            for a in list(self.agents.values())
            if a.next_poll <= now and a.url not in self._in_flight
        ]

    async def resolve(self) -> None:
        if self.dns is None:
            return
        name, port = self.dns
        resolver = make_resolver(self.settings.hub_dns_nameserver, self.settings.hub_agent_timeout)
        try:
            addresses = await resolve_addresses(resolver, name)
        except DNSLookupError as exc:
            if self.dns_error != exc.message:
                self.generation += 1
            self.dns_error = exc.message  # the agents found before stay
            log.warning("agents DNS %s: %s", name, exc.message)
            return
        error = None if addresses else f"{name} has no A/AAAA records"
        if error != self.dns_error:
            self.dns_error = error
            self.generation += 1
        urls = {agent_url(a, port) for a in addresses}
        added = urls - set(self.agents)
        gone = [u for u, a in self.agents.items() if a.origin == "dns" and u not in urls]
        for url in added:
            self.agents[url] = AgentState(url, "dns")
        for url in gone:
            del self.agents[url]
        if added or gone:
            self.generation += 1

    async def poll_once(self) -> None:
        """One whole round: resolve when due, poll every due agent and wait for all of them
        (the benches and tests; the server's loop is ``_run``)."""
        await self._resolve_if_due()
        await asyncio.gather(*(self._poll(a) for a in self._due()))

    async def _poll(self, agent: AgentState) -> None:
        async with self.semaphore():
            started = time.perf_counter()
            try:
                answer = await self.client().summary(agent.url, agent.etag)
                if answer.doc is not None:
                    agent.nodes = check_summary(answer.doc)
                    agent.etag = answer.etag
                now = self.clock()
                shown = agent.last_seen or 0.0
                # A 304 changes only lastSeen: shown to LAST_SEEN_STEP, so the fleet document
                # (and its ETag) stays the same between steps.
                changed = (
                    agent.status != OK or answer.doc is not None or now - shown >= LAST_SEEN_STEP
                )
                agent.status, agent.error, agent.failures = OK, None, 0
                if changed:
                    agent.last_seen = now
                agent.next_poll = now + self.settings.hub_poll_interval
                outcome = "not-modified" if answer.doc is None else "ok"
            except AgentError as exc:
                changed = agent.status != UNREACHABLE or agent.error != exc.message
                agent.status, agent.error = UNREACHABLE, exc.message
                agent.etag = None
                agent.failures += 1
                backoff = min(self.settings.hub_poll_interval * 2**agent.failures, MAX_BACKOFF)
                agent.next_poll = self.clock() + backoff
                outcome = "error"
            agent.latency = time.perf_counter() - started
            self.metrics.poll.labels(outcome).observe(agent.latency)
            self.polls += 1
            if changed:
                self.generation += 1

    def _bind_metrics(self) -> None:
        """Bind the gauges to the live counts: they are read at scrape time, so the simulated
        nodes built in the background and DNS changes are counted too."""
        for status in (PENDING, OK, UNREACHABLE):
            self.metrics.agents.labels(status).set_function(partial(self._agents_in, status))
            self.metrics.nodes.labels(status).set_function(partial(self._nodes_in, status))

    def _agents_in(self, status: str) -> float:
        return float(sum(1 for a in list(self.agents.values()) if a.status == status))

    def _nodes_in(self, status: str) -> float:
        n = sum(len(a.nodes) for a in list(self.agents.values()) if a.status == status)
        return float(n + (len(self.fleet.nodes) if status == OK else 0))

    # -- views ------------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """``GET /api/v1/fleet``: every agent and every node known (cached per generation)."""
        return self._document()[1]

    def _document(self) -> tuple[tuple[int, int], dict[str, Any]]:
        """The document and the (generation, simulated nodes) it was built from: the nodes are
        listed once, so the key never claims nodes added while it was being built."""
        generation = self.generation
        sims = self.fleet.list()  # a fresh list: the builder thread may add nodes meanwhile
        key = (generation, len(sims))
        cached = self._doc
        if cached is not None and cached[:2] == key:
            return key, cached[2]
        nodes = [fleet_node(n.summary(self.summaries), None, OK) for n in sims]
        for a in sorted(self.agents.values(), key=lambda a: a.url):
            status = a.status if a.status != PENDING else UNREACHABLE
            nodes.extend(fleet_node(s, a.url, status) for s in a.nodes)
        nodes.sort(key=lambda n: (n["node"], n["agent"] or ""))
        doc: dict[str, Any] = {
            "agents": [a.to_dict() for a in sorted(self.agents.values(), key=lambda a: a.url)],
            "nodes": nodes,
        }
        if self.dns is not None:
            name, port = self.dns
            doc["discovery"] = {"dns": f"{name}:{port}", "error": self.dns_error}
        self._doc = (*key, doc)
        return key, doc

    def encoded(self) -> Encoded:
        """The document as bytes with its ETag (for 304s), encoded once per generation."""
        key, doc = self._document()
        cached = self._encoded
        if cached is None or cached[:2] != key:
            cached = (*key, encode(doc))
            self._encoded = cached
        return cached[2]

    # -- fan-out ----------------------------------------------------------------------------
    def _targets(self) -> tuple[list[tuple[AgentState, str]], list[SimulatedNode]]:
        remote = [(a, n["node"]) for a in self.agents.values() if a.status == OK for n in a.nodes]
        return remote, list(self.fleet.list())

    async def _fan_out(
        self,
        remote: list[tuple[AgentState, str]],
        call: Callable[[AgentState, str], Awaitable[dict[str, Any]]],
        failed: Callable[[str, str], dict[str, Any]],
    ) -> list[dict[str, Any]]:
        async def one(agent: AgentState, node: str) -> dict[str, Any]:
            async with self.semaphore():
                try:
                    result = await asyncio.wait_for(
                        call(agent, node), self.settings.hub_agent_timeout * 2
                    )
                except AgentError as exc:
                    result = failed(node, exc.message)
                except TimeoutError:
                    result = failed(node, "timed out")
            result["agent"] = agent.url
            return result

        return list(await asyncio.gather(*(one(a, n) for a, n in remote)))

    async def fit(self, body: bytes, content_type: str, text: str) -> dict[str, Any]:
        remote, _ = self._targets()

        async def call(agent: AgentState, node: str) -> dict[str, Any]:
            answer = await self.client().dry_run(agent.url, node, body, content_type)
            return fit_result(node, answer.doc or {})

        def local() -> list[dict[str, Any]]:
            with deadline.within(self.settings.cpu_time_budget, "the fleet fit"):
                return [
                    {**fit_result(name, doc), "agent": None}
                    for name, doc in self.fleet.dry_run_all(text)
                ]

        local_task = asyncio.to_thread(local)
        remote_results, local_results = await asyncio.gather(
            self._fan_out(remote, call, fit_error), local_task
        )
        results = sorted(
            [*local_results, *remote_results], key=lambda r: (r["node"], r.get("agent") or "")
        )
        return {"results": results, "unreachable": self._unreachable()}

    async def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        remote, sims = self._targets()
        params: dict[str, str] = {"release": release}
        if gate is not None:
            params["podLevelResourceManagers"] = "true" if gate else "false"
        query = urlencode(params)

        async def call(agent: AgentState, node: str) -> dict[str, Any]:
            answer = await self.client().upgrade(agent.url, node, query)
            return upgrade_result(node, answer.doc or {})

        budget = self.settings.cpu_time_budget

        def local() -> list[dict[str, Any]]:
            # Nodes not reached within the budget say so; the checked ones are cached, so a
            # retry goes on where this one stopped.
            started = time.monotonic()
            out: list[dict[str, Any]] = []
            for n in sims:
                if time.monotonic() - started > budget:
                    message = f"not checked within the {budget:g} s time budget: ask again"
                    out.append({**upgrade_error(n.name, message), "agent": None})
                else:
                    out.append({**n.upgrade(release, gate), "agent": None})
            return out

        remote_results, local_results = await asyncio.gather(
            self._fan_out(remote, call, upgrade_error), asyncio.to_thread(local)
        )
        results = sorted(
            [*local_results, *remote_results], key=lambda r: (r["node"], r.get("agent") or "")
        )
        return {"release": release, "results": results, "unreachable": self._unreachable()}

    def _unreachable(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.agents.values() if a.status != OK]
