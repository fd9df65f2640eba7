"""Fit and upgrade across the fleet (``POST /api/v1/fleet/fit``, ``GET /api/v1/fleet/upgrade``
and their pages): the question goes to every node, and each node's own engine decides. Remote
nodes are asked as the catalog's sources (``app.services.nodes.remote.RemoteNode``, through
their agents: the same request a node page's dry run or upgrade panel makes), bounded by the hub's
concurrency, one deadline per answer and one deadline for the whole fan-out, and at most
``hub_max_fanout`` requests per question (the nodes past it are listed as not asked, never as
failing): a slow or failing agent gives an ``error`` result for its nodes, never an HTTP error
of the hub. The demo fleet's nodes (``app.services.nodes.demo_fleet``) answer in worker
processes (``app.services.fleet.workers``); an upgrade check is a job that fills in as answers
arrive (``app.services.fleet.jobs``).

``FleetQuestions`` is held by ``app.services.fleet.hub.Hub`` (``hub.questions``), which
gives it the agents, their nodes (``remote_nodes``), the workers and the semaphore.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from app.adapters.heap import release_free_heap
from app.domain.pod.model import Pod
from app.services.fleet.jobs import UpgradeJob
from app.services.fleet.ranked import Entry, RankedFit, entry, merged, ranked
from app.services.fleet.rows import fit_error, fit_result, upgrade_error, upgrade_result
from app.services.fleet.score import ScoreBasis, scored
from app.services.nodes.errors import AgentUnreachableError, NodeInputError
from app.services.nodes.remote import RemoteAnswer, RemoteNode

if TYPE_CHECKING:
    from app.contracts.summary import NodeSummaryV1
    from app.services.fleet.agents import AgentDirectory
    from app.services.fleet.workers import FleetWorkers
    from app.services.nodes.remote import RemoteNodes
    from app.settings import Settings

log = logging.getLogger(__name__)

#: The whole fan-out of one question ends after this many answer deadlines.
FANOUT_DEADLINES = 3
#: Upgrade-readiness jobs kept (release × gate × fleet generation); the oldest goes first.
MAX_JOBS = 8


class Failed(Protocol):
    """The row of a node without a usable answer (``fleet_rows.fit_error``/``upgrade_error``)."""

    def __call__(self, node: str, message: str, *, asked: bool = True) -> dict[str, Any]: ...


@dataclass(eq=False)
class FleetQuestions:
    """The questions a hub asks of every node (see the module docstring); the hub holds one
    (``Hub.questions``) and gives it its agents, their nodes, its workers and concurrency."""

    settings: Settings
    directory: AgentDirectory
    remote_nodes: RemoteNodes
    workers: FleetWorkers | None
    semaphore: Callable[[], asyncio.Semaphore]
    summary_of: Callable[[str, str | None], NodeSummaryV1 | None]
    _jobs: dict[tuple[str, bool | None, int], UpgradeJob] = field(default_factory=dict, init=False)
    #: The running upgrade checks (the hub cancels them when it stops).
    tasks: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    async def _fan_out(
        self,
        remote: list[RemoteNode],
        ask: Callable[[RemoteNode], Awaitable[RemoteAnswer]],
        row: Callable[[str, dict[str, Any]], dict[str, Any]],
        failed: Failed,
    ) -> list[dict[str, Any]]:
        """Every remote node's answer, in ``remote``'s order: at most ``hub_max_fanout``
        requests, all of them within ``FANOUT_DEADLINES`` answer deadlines."""
        cap = self.settings.hub_max_fanout
        deadline = self.settings.hub_agent_timeout * FANOUT_DEADLINES

        async def one(node: RemoteNode) -> dict[str, Any]:
            async with self.semaphore():
                try:
                    answer = await ask(node)  # the client's deadline bounds each answer
                except AgentUnreachableError as exc:
                    return failed(node.name, exc.message)
            return row(node.name, answer.doc)

        tasks = [asyncio.ensure_future(one(n)) for n in remote[:cap]]
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=deadline)
        finally:  # past the deadline, or the question itself cancelled: nothing left running
            late = {t for t in tasks if not t.done()}
            for t in late:
                t.cancel()
        results = []
        for node, task in zip(remote[:cap], tasks, strict=True):
            if task in late:
                message = f"not checked: no answer within the question's {deadline:g} s deadline"
                result = failed(node.name, message, asked=False)
            else:
                result = task.result()
            results.append({**result, "agent": node.agent})
        for node in remote[cap:]:
            message = f"not asked: over the hub's cap of {cap} agent requests per question"
            results.append({**failed(node.name, message, asked=False), "agent": node.agent})
        return results

    async def fit(
        self, body: bytes, content_type: str, text: str, pod: Pod, strategy: str
    ) -> RankedFit:
        """Every node's dry run of the manifest ``text`` (``pod``: its first pod, as parsed by
        the route), ranked by the scheduler plugin's ``strategy`` (``app.services.fleet.score``):
        the demo fleet's in its worker processes (which answer entries with the rows encoded),
        the agents' nodes through their agents, scored and encoded here."""
        remote = self.remote_nodes.reachable()
        budget = self.settings.cpu_time_budget
        local = self.workers.fit(text, pod, strategy, budget) if self.workers else _nothing()
        remote_rows, local_entries = await asyncio.gather(
            self._fan_out(
                remote, lambda n: n.ask_dry_run(body, content_type), fit_result, fit_error
            ),
            local,
        )
        remote_entries = (
            await asyncio.to_thread(self._entries, remote_rows, pod, strategy)
            if remote_rows
            else []
        )
        entries = merged((local_entries, remote_entries))
        return RankedFit(strategy, entries, self._unreachable())

    def _entries(self, rows: list[dict[str, Any]], pod: Pod, strategy: str) -> list[Entry]:
        """The agents' nodes' rows, scored, as entries best first."""
        return ranked([entry(scored(r, pod, strategy, self._basis_of)) for r in rows])

    def _basis_of(self, node: str, agent: str | None) -> ScoreBasis | None:
        summary = self.summary_of(node, agent)
        return ScoreBasis.of(summary) if summary is not None else None

    def upgrade_job(self, release: str, gate: bool | None) -> UpgradeJob:
        """The upgrade-readiness check of (``release``, ``gate``) for the fleet as it is now
        (a change of any node's data starts a new one; the demo nodes keep their verdicts),
        started if needed."""
        key = (release, gate, self.directory.generation)
        job = self._jobs.get(key)
        if job is not None and job.failure is None:
            return job
        remote = self.remote_nodes.reachable()
        demo = self.workers.names() if self.workers else []
        targets = [(n, None) for n in demo] + [(n.name, n.agent) for n in remote]
        job = self._jobs[key] = UpgradeJob(release, gate, targets)
        while len(self._jobs) > MAX_JOBS:
            del self._jobs[next(iter(self._jobs))]
        task = asyncio.create_task(self._run_upgrade(job, remote), name=f"upgrade {release}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return job

    async def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        """Every node's verdict for a kubelet of ``release``, complete (one call)."""
        job = self.upgrade_job(release, gate)
        await job.wait()
        return job.answer()

    async def _run_upgrade(self, job: UpgradeJob, remote: list[RemoteNode]) -> None:
        def ask(node: RemoteNode) -> Awaitable[RemoteAnswer]:
            return node.ask_upgrade(job.release, job.gate)

        remote_task = asyncio.ensure_future(
            self._fan_out(remote, ask, upgrade_result, upgrade_error)
        )
        futures = self.workers.upgrade(job.release, job.gate) if self.workers else []
        try:
            for answer in asyncio.as_completed([asyncio.wrap_future(f) for f in futures]):
                rows, cpu = await answer
                if rows and isinstance(rows[0], tuple):  # the question itself is refused
                    _, message, field = rows[0]
                    for f in futures:
                        f.cancel()
                    remote_task.cancel()
                    job.finish(failure=NodeInputError(message, field))
                    return
                job.add(rows, cpu)
            job.add(await remote_task)
            job.unreachable = self._unreachable()
            job.finish()
            await asyncio.to_thread(release_free_heap)  # the answers' pickles, off the loop
        except Exception as exc:  # a worker died: what was answered stays, the rest says why
            remote_task.cancel()
            log.exception("fleet upgrade check %s stopped", job.release)
            job.finish(stopped=f"the check stopped: {exc.__class__.__name__}: {exc}")

    def _unreachable(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.directory.agents.values() if not a.ok]


async def _nothing() -> list[Entry]:
    return []
