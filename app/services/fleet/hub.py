"""The fleet hub (``numascope serve --hub``): follows the agents' changes and answers for the
whole fleet from what they said.

**Fan-in by watch streams** (issue 20; DESIGN.md §8). The hub keeps one long-lived HTTP stream
per agent, ``GET /api/v1/summary/watch`` (``app.services.fleet.agent_summary.SummaryFeed``), with
the semantics of a Kubernetes watch: the agent sends every node once, then only what changes,
as it changes, and a bookmark every ``hub_watch_bookmark`` seconds; the hub keeps the
``resourceVersion`` it reached and, after a reconnect, resumes from it (a ``410`` means the
agent restarted or forgot: the hub lists again). Why this and not agents writing custom
resources to the API server for the hub to watch: it needs nothing the cluster must grant or
host (no CRD, no write RBAC on 5,000 nodes, no etcd write per admission, and it works for agents
outside a cluster), and it already costs per change: an idle agent costs one bookmark line per
interval, a change one line, with no poll round at all (polling 5,000 agents every 2 s needed
~2,500 requests/s). The events have the Kubernetes watch shape, so an API-server path could
feed the same update later. There is no consensus or sharding: one hub process, one stream per
agent, and a restarted hub simply lists every agent again.

Each stream is a task of its own (``_follow``): connects are bounded by ``hub_concurrency`` at
a time (a thousand agents back after an outage do not open a thousand connections at once),
reconnects back off exponentially with jitter (``STREAM_BACKOFF``, at most
``MAX_STREAM_BACKOFF``), a stream silent for ``IDLE_BOOKMARKS`` bookmark intervals or sending a
line over ``hub_max_body_bytes`` is dropped, and every event is parsed with the contract
(``SummaryWatchEventV1``): garbage makes its agent ``unreachable`` with the field named, never a
500. A stream that breaks mid-way is reconnected at once, and only a failing reconnect makes
the agent ``unreachable``. An agent without the route (404/405: an older agent) is **polled**
as before, and its stream tried again every ``WATCH_RETRY`` seconds; ``hub_watch`` off polls
every agent.

Polling (the older agents): every ``hub_poll_interval`` seconds in a task of its own (a slow or
dead agent delays no other), at most ``hub_concurrency`` at once, each with one deadline for
its whole answer and a size cap (``app.adapters.agents``), ``If-None-Match`` with the last ETag
(an unchanged agent costs a 304), and after a failure an exponential backoff (interval ×
2^failures, at most ``MAX_BACKOFF``).

Agents come from a static list (``Settings.hub_agents``) and/or every A/AAAA record of a
headless Service (``Settings.hub_agents_dns``, re-resolved every ``DNS_INTERVAL`` seconds; an
address that disappears drops its agent and its stream, a failing lookup keeps the agents found
before and is shown as the document's ``discovery.error``). An agent is refused
(``unreachable``, saying why) when it claims more than ``hub_max_nodes_per_agent`` nodes or a
name of the hub's own demo fleet; a node name two agents claim is listed under both with a
``duplicate-node`` finding. Each agent keeps ``status`` (``pending`` until its first answer,
then ``ok`` or ``unreachable``), the error text and field, and ``lastSeen``
(``app.services.fleet.agents``); its nodes stay listed with the agent's status when it stops
answering. The metrics (agents and nodes by status, poll latency by outcome, watch events by
type) are read from the live state at scrape time.

Pages and JSON read what the agents last said: none waits for an agent. ``/api/v1/fleet`` is
served from bytes built once per change of the fleet (``generation``: a node's data, an
agent's status or error, the agent set; never a bookmark) by ``hub.view``
(``app.services.fleet.document``), so its ETag moves only when the fleet does. Fit and upgrade fan out to every node (``hub.questions``:
``app.services.fleet.fanout``).
The demo fleet's nodes (``--demo-fleet``) answer in the hub's process
(``app.services.nodes.demo_fleet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from functools import partial

from prometheus_client import CollectorRegistry

from app.adapters.agents import AgentClient, AgentError, WatchUnsupportedError
from app.adapters.dns import DNSLookupError, agent_url, make_resolver, resolve_addresses
from app.adapters.heap import limit_arenas
from app.contracts.summary import NodeSummaryV1, SummaryWatchEventV1
from app.services.fleet.agent_summary import (
    SummaryCache,
)
from app.services.fleet.agents import (
    LAST_SEEN_STEP,
    OK,
    PENDING,
    POLL,
    UNREACHABLE,
    WATCH,
    AgentState,
    HubMetrics,
)
from app.services.fleet.document import FleetDocument
from app.services.fleet.fanout import FleetQuestions
from app.services.fleet.workers import FleetWorkers
from app.services.nodes.demo_fleet import DemoFleet
from app.services.nodes.remote import RemoteNodes
from app.settings import Settings, check_dns_target, split_list

log = logging.getLogger(__name__)

DNS_INTERVAL = 5.0
MAX_BACKOFF = 60.0
#: The poller's tick: due agents are looked for this often (at most), each polled on its own.
MAX_TICK = 0.5
#: A watch stream silent for this many bookmark intervals is dropped (and reconnected).
IDLE_BOOKMARKS = 3
#: Seconds before a polled agent's watch stream is tried again (it may have been upgraded).
WATCH_RETRY = 300.0
#: A watch stream that ends sooner than this after opening is reconnected after a backoff.
SHORT_STREAM = 1.0
#: Backoff of a watch stream's reconnects: this × 2^failures (at most ``MAX_STREAM_BACKOFF``),
#: plus up to a quarter of it at random so that agents back after an outage spread out.
STREAM_BACKOFF = 0.5
MAX_STREAM_BACKOFF = 30.0


class HubDisabledError(LookupError):
    """A fleet route on a server that is not a hub (404)."""

    def __init__(self) -> None:
        self.message = "this Numascope is not a hub: start it with 'numascope serve --hub'"
        super().__init__(self.message)


class Hub:
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
            url.rstrip("/"): self._agent(url.rstrip("/"), "static")
            for url in split_list(settings.hub_agents)
        }
        self.dns = check_dns_target(settings.hub_agents_dns) if settings.hub_agents_dns else None
        self.dns_error: str | None = None
        self._dns_at = -DNS_INTERVAL
        self.fleet = fleet if fleet is not None else DemoFleet(settings.demo_fleet)
        self.workers = (
            FleetWorkers(self.fleet.count, self.fleet.seed, settings.hub_fleet_workers or None)
            if self.fleet.count
            else None
        )
        self.remote_nodes = RemoteNodes(self)
        self.questions = FleetQuestions(
            settings, self, self.remote_nodes, self.workers, self.semaphore, self.summary_of
        )
        self.generation = 0
        self.view = FleetDocument(self)
        self._client: AgentClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._streams: dict[str, asyncio.Task[None]] = {}
        self.polls = 0
        self._bind_metrics()

    def _agent(self, url: str, origin: str) -> AgentState:
        return AgentState(url, origin, mode=WATCH if self.settings.hub_watch else POLL)

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
        limit_arenas()  # before the fleet's builder and the request threads allocate
        self.fleet.start()
        if self.workers is not None:
            self.workers.start()
        self._task = asyncio.create_task(self._run(), name="hub-poller")

    async def stop(self) -> None:
        tasks = [
            t
            for t in (
                self._task,
                *self._in_flight.values(),
                *self._streams.values(),
                *self.questions.tasks,
            )
            if t is not None
        ]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._client is not None:
            await self._client.aclose()
        if self.workers is not None:
            self.workers.close()

    async def _run(self) -> None:
        """Each due agent is polled in a task of its own, so a slow or dead agent delays
        nobody else's refresh; the loop only looks for due agents every tick."""
        tick = min(self.settings.hub_poll_interval, MAX_TICK)
        while True:
            try:
                await self._resolve_if_due()
                self._follow_agents()
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
            if a.mode == POLL and a.next_poll <= now and a.url not in self._in_flight
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
            self.agents[url] = self._agent(url, "dns")
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
                    agent.nodes = self._accept(answer.doc.nodes)
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

    def _accept(self, nodes: list[NodeSummaryV1], field: str = "nodes") -> list[NodeSummaryV1]:
        """The nodes of an agent's summary, or ``AgentError`` when the hub refuses them: more
        than ``hub_max_nodes_per_agent``, a name listed twice, or a name of the hub's own demo
        fleet (an agent must not stand in for the hub's nodes). ``field``: where the nodes
        came from (the summary's ``nodes``, or the ``object`` of a watch event)."""
        cap = self.settings.hub_max_nodes_per_agent
        if len(nodes) > cap:
            raise _refused("nodes", f"claims {len(nodes)} nodes; the hub takes at most {cap}")
        seen: set[str] = set()
        for i, node in enumerate(nodes):
            where = f"{field}[{i}].node" if field == "nodes" else f"{field}.node"
            if node.node in seen:
                raise _refused(where, f"lists node {node.node!r} twice")
            seen.add(node.node)
            if self.fleet.claims(node.node):
                raise _refused(where, f"claims {node.node!r}, a node of the hub's own demo fleet")
        return list(nodes)

    # -- watch streams ----------------------------------------------------------------------
    def _follow_agents(self) -> None:
        """A stream task for every followed agent, none for an agent that is gone; a polled
        agent whose retry is due is followed again."""
        now = self.clock()
        for agent in list(self.agents.values()):
            retry = agent.mode == POLL and 0 < agent.watch_retry <= now
            if retry and agent.url not in self._in_flight:
                agent.mode = WATCH
            if agent.mode == WATCH and agent.url not in self._streams:
                task = asyncio.create_task(self._follow(agent), name=f"watch {agent.url}")
                self._streams[agent.url] = task
                task.add_done_callback(partial(self._stream_done, agent.url))
        for url, task in list(self._streams.items()):
            if self.agents.get(url) is None:
                task.cancel()

    def _stream_done(self, url: str, task: asyncio.Task[None]) -> None:
        if self._streams.get(url) is task:
            del self._streams[url]

    async def _follow(self, agent: AgentState) -> None:
        """Follow one agent's watch stream: resume from the version reached after the stream
        ends or breaks (at once after a long-lived stream; after a backoff when it failed or
        ended at once), until the agent turns out to have no stream (then it is polled)."""
        while self.agents.get(agent.url) is agent:
            opened = time.perf_counter()
            try:
                relist = await self._stream(agent)
                if relist or time.perf_counter() - opened >= SHORT_STREAM:
                    continue
                delay = self._backoff(agent.failures + 1)
            except WatchUnsupportedError:
                agent.mode = POLL
                agent.next_poll = 0.0
                agent.watch_retry = self.clock() + WATCH_RETRY
                return
            except AgentError as exc:
                self._failed(agent, exc)
                delay = self._backoff(agent.failures)
            await asyncio.sleep(delay)

    @staticmethod
    def _backoff(failures: int) -> float:
        delay = min(STREAM_BACKOFF * 2 ** min(failures, 16), MAX_STREAM_BACKOFF)
        return delay * (1 + random.random() / 4)

    def _failed(self, agent: AgentState, exc: AgentError) -> None:
        if agent.status != UNREACHABLE or agent.error != exc.message:
            self.generation += 1
        agent.status, agent.error, agent.error_field = UNREACHABLE, exc.message, exc.field
        agent.etag = None
        agent.failures += 1

    async def _stream(self, agent: AgentState) -> bool:
        """One watch stream of ``agent``, applied event by event, until the agent ends it;
        ``True`` after ``410 Expired`` (the version is forgotten: the next stream, opened at
        once, lists again)."""
        bookmark = self.settings.hub_watch_bookmark
        listing: dict[str, NodeSummaryV1] | None = None if agent.resource_version else {}
        nodes = {n.node: n for n in agent.nodes}
        events = self.client().watch(
            agent.url,
            agent.resource_version,
            bookmark=bookmark,
            idle=IDLE_BOOKMARKS * bookmark,
            connects=self.semaphore(),
        )
        counted = self.metrics.events
        async for event in events:
            counted.labels(event.type).inc()
            if event.type == "ERROR":
                status = event.status
                assert status is not None  # checked by the client
                if status.code == 410:
                    agent.resource_version = ""
                    return True
                raise AgentError(
                    f"ended its watch stream: {status.code} {status.reason}: {status.message}",
                    "status",
                )
            if listing is not None:
                listing = self._listed(agent, listing, event)
                continue
            if event.object is not None:
                if event.type == "DELETED":
                    nodes.pop(event.object.node, None)
                else:
                    nodes[event.object.node] = event.object
            elif agent.status == OK:  # a bookmark: only the version moves
                agent.resource_version = event.resource_version
                continue
            self._update(agent, nodes, event.resource_version)
        return False

    def _listed(
        self, agent: AgentState, listing: dict[str, NodeSummaryV1], event: SummaryWatchEventV1
    ) -> dict[str, NodeSummaryV1] | None:
        """One event of a stream's initial list (``None``: the list is complete and applied)."""
        if event.type == "ADDED" and event.object is not None:
            listing[event.object.node] = event.object
            cap = self.settings.hub_max_nodes_per_agent
            if len(listing) > cap:
                raise _refused(
                    "nodes", f"claims more than {cap} nodes; the hub takes at most {cap}"
                )
            return listing
        if event.type == "BOOKMARK" and event.initial_events_end:
            self._update(agent, listing, event.resource_version)
            return None
        if event.type == "BOOKMARK":
            return listing
        raise _refused("type", f"sent a {event.type} event inside its initial list")

    def _update(self, agent: AgentState, nodes: dict[str, NodeSummaryV1], rv: str) -> None:
        """The agent's nodes after an event (a bookmark changes only the version reached)."""
        accepted = self._accept(list(nodes.values()), "object")
        changed = agent.status != OK or accepted != agent.nodes
        agent.resource_version = rv
        if changed:
            agent.nodes = accepted
            agent.status, agent.error, agent.error_field, agent.failures = OK, None, None, 0
            agent.last_seen = self.clock()
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
    def summary_of(self, node: str, agent: str | None) -> NodeSummaryV1 | None:
        """The summary of ``node`` as the hub holds it (``agent`` ``None``: a demo-fleet node)."""
        if agent is None:
            sim = self.fleet.nodes.get(node)
            return sim.agent_summary(SummaryCache()) if sim is not None else None
        state = self.agents.get(agent)
        return next((s for s in state.nodes if s.node == node), None) if state else None


def _refused(field: str, problem: str) -> AgentError:
    return AgentError(f"answered a summary the hub refuses: {field}: {problem}", field)
