"""The fleet hub (``numascope serve --hub``): polls the agents' summaries and answers for the
whole fleet from what answered.

Agents come from a static list (``Settings.hub_agents``) and/or every A/AAAA record of a
headless Service (``Settings.hub_agents_dns``, re-resolved every ``DNS_INTERVAL`` seconds; an
address that disappears drops its agent, a failing lookup keeps the agents found before and is
shown as the document's ``discovery.error``). Every agent is polled each
``hub_poll_interval`` seconds in a task of its own (a slow or dead agent delays no other): at
most ``hub_concurrency`` at once, each with one deadline for its whole answer and a size cap
(``app.adapters.agents``), ``If-None-Match`` with the last ETag (an unchanged agent costs a
304), and after a failure an exponential backoff (interval × 2^failures, at most
``MAX_BACKOFF``). Answers are parsed with the agent summary contract
(``app.contracts.summary``): garbage makes its agent ``unreachable`` with the field named,
never a 500. An agent is refused (``unreachable``, saying why) when it claims more than
``hub_max_nodes_per_agent`` nodes or a name of the hub's own demo fleet; a node name two
agents claim is listed under both with a ``duplicate-node`` finding. Each agent keeps
``status`` (``pending`` until its first answer, then ``ok`` or ``unreachable``), the error
text and field, and when it last answered (to ``LAST_SEEN_STEP``); its nodes stay listed with
the agent's status when it stops answering. The metrics (agents and nodes by status, poll
latency by outcome) are read from the live state at scrape time.

Pages and JSON read the last poll's results: none waits for an agent. What is kept per agent
and the metrics are ``app.services.hub_agents``; fit and upgrade fan out to every node
(``app.services.hub_fanout``). The demo fleet's nodes (``--demo-fleet``) answer in the hub's
process (``app.services.nodes.demo_fleet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from app.adapters.agents import AgentClient, AgentError
from app.adapters.dns import DNSLookupError, agent_url, make_resolver, resolve_addresses
from app.contracts.summary import Finding, NodeSummaryV1, SummaryDocumentV1
from app.services.agent_summary import Encoded, SummaryCache, encode
from app.services.fleet_rows import fleet_node
from app.services.hub_agents import (
    LAST_SEEN_STEP,
    OK,
    PENDING,
    UNREACHABLE,
    AgentState,
    HubMetrics,
)
from app.services.hub_fanout import FleetFanOut
from app.services.nodes.demo_fleet import DemoFleet, SimulatedNode
from app.settings import Settings, check_dns_target, split_list

log = logging.getLogger(__name__)

DNS_INTERVAL = 5.0
MAX_BACKOFF = 60.0
#: The poller's tick: due agents are looked for this often (at most), each polled on its own.
MAX_TICK = 0.5


class HubDisabledError(LookupError):
    """A fleet route on a server that is not a hub (404)."""

    def __init__(self) -> None:
        self.message = "this Numascope is not a hub: start it with 'numascope serve --hub'"
        super().__init__(self.message)


class Hub(FleetFanOut):
    """The hub of one app: polls the agents, builds the fleet document, fans out."""

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
        # A simulated node never changes once built: its summary is built once.
        self._sim_summaries: dict[str, NodeSummaryV1] = {}
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
                    agent.nodes = self._accept(answer.doc)
                    agent.etag = answer.etag
                now = self.clock()
                shown = agent.last_seen or 0.0
                # A 304 changes only lastSeen: shown to LAST_SEEN_STEP, so the fleet document
                # (and its ETag) stays the same between steps.
                changed = (
                    agent.status != OK or answer.doc is not None or now - shown >= LAST_SEEN_STEP
                )
                agent.status, agent.error, agent.error_field, agent.failures = OK, None, None, 0
                if changed:
                    agent.last_seen = now
                agent.next_poll = now + self.settings.hub_poll_interval
                outcome = "not-modified" if answer.doc is None else "ok"
            except AgentError as exc:
                changed = agent.status != UNREACHABLE or agent.error != exc.message
                agent.status, agent.error, agent.error_field = UNREACHABLE, exc.message, exc.field
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

    def _accept(self, doc: SummaryDocumentV1) -> list[NodeSummaryV1]:
        """The nodes of an agent's summary, or ``AgentError`` when the hub refuses them: more
        than ``hub_max_nodes_per_agent``, a name listed twice, or a name of the hub's own demo
        fleet (an agent must not stand in for the hub's nodes)."""
        cap = self.settings.hub_max_nodes_per_agent
        if len(doc.nodes) > cap:
            raise _refused("nodes", f"claims {len(doc.nodes)} nodes; the hub takes at most {cap}")
        seen: set[str] = set()
        for i, node in enumerate(doc.nodes):
            field = f"nodes[{i}].node"
            if node.node in seen:
                raise _refused(field, f"lists node {node.node!r} twice")
            seen.add(node.node)
            if self.fleet.claims(node.node):
                raise _refused(field, f"claims {node.node!r}, a node of the hub's own demo fleet")
        return list(doc.nodes)

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
        nodes = [fleet_node(self._sim_summary(n), None, OK) for n in sims]
        agents = sorted(self.agents.values(), key=lambda a: a.url)
        claims: dict[str, list[str]] = {}
        for a in agents:
            for s in a.nodes:
                claims.setdefault(s.node, []).append(a.url)
        for a in agents:
            status = a.status if a.status != PENDING else UNREACHABLE
            for s in a.nodes:
                others = [u for u in claims[s.node] if u != a.url]
                nodes.append(fleet_node(s, a.url, status, _duplicate(s.node, others)))
        nodes.sort(key=lambda n: (n["node"], n["agent"] or ""))
        doc: dict[str, Any] = {
            "agents": [a.to_dict() for a in agents],
            "nodes": nodes,
        }
        if self.dns is not None:
            name, port = self.dns
            doc["discovery"] = {"dns": f"{name}:{port}", "error": self.dns_error}
        self._doc = (*key, doc)
        return key, doc

    def _sim_summary(self, node: SimulatedNode) -> NodeSummaryV1:
        summary = self._sim_summaries.get(node.name)
        if summary is None:
            summary = self._sim_summaries[node.name] = node.agent_summary(self.summaries)
        return summary

    def summary_of(self, node: str, agent: str | None) -> NodeSummaryV1 | None:
        """The summary of ``node`` as the hub holds it (``agent`` ``None``: a demo-fleet node)."""
        if agent is None:
            sim = self.fleet.nodes.get(node)
            return self._sim_summary(sim) if sim is not None else None
        state = self.agents.get(agent)
        return next((s for s in state.nodes if s.node == node), None) if state else None

    def encoded(self) -> Encoded:
        """The document as bytes with its ETag (for 304s), encoded once per generation."""
        key, doc = self._document()
        cached = self._encoded
        if cached is None or cached[:2] != key:
            cached = (*key, encode(doc))
            self._encoded = cached
        return cached[2]


def _refused(field: str, problem: str) -> AgentError:
    return AgentError(f"answered a summary the hub refuses: {field}: {problem}", field)


def _duplicate(name: str, others: list[str]) -> list[Finding]:
    """The finding of a node name other agents claim too (both are listed: the hub cannot
    tell which is the node's real agent)."""
    if not others:
        return []
    message = f"node {name} is also claimed by agent {', '.join(others[:5])}"
    if len(others) > 5:
        message += f" and {len(others) - 5} more"
    return [Finding(code="duplicate-node", severity="error", message=message)]
