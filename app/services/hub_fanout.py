"""Fit and upgrade across the fleet (``POST /api/v1/fleet/fit``, ``GET /api/v1/fleet/upgrade``
and their pages): the question goes to every node, and each node's own engine decides. Remote
nodes are asked through their agents (``app.adapters.agents``), bounded by the hub's
concurrency, one deadline per answer and one deadline for the whole fan-out, and at most
``hub_max_fanout`` requests per question (the nodes past it are listed as not asked, never as
failing): a slow or failing agent gives an ``error`` result for its nodes, never an HTTP error
of the hub. The demo fleet's nodes (``app.services.nodes.demo_fleet``) answer in the hub's
process, in a worker thread, within the CPU time budget.

``FleetFanOut`` is a base of ``app.services.hub.Hub``, which provides the agents, the client
and the semaphore.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlencode

from app.adapters.agents import AgentClient, AgentError
from app.contracts.summary import NodeSummaryV1
from app.domain import deadline
from app.domain.pod import Pod
from app.services.fleet_rows import fit_error, fit_result, upgrade_error, upgrade_result
from app.services.fleet_score import rank_fits
from app.services.hub_agents import OK, AgentState
from app.services.nodes.demo_fleet import DemoFleet, SimulatedNode
from app.settings import Settings

#: The whole fan-out of one question ends after this many answer deadlines.
FANOUT_DEADLINES = 3


class Failed(Protocol):
    """The row of a node without a usable answer (``fleet_rows.fit_error``/``upgrade_error``)."""

    def __call__(self, node: str, message: str, *, asked: bool = True) -> dict[str, Any]: ...


class FleetFanOut(ABC):
    """The fan-out of ``Hub`` (see the module docstring)."""

    settings: Settings
    agents: dict[str, AgentState]
    fleet: DemoFleet

    @abstractmethod
    def client(self) -> AgentClient: ...
    @abstractmethod
    def semaphore(self) -> asyncio.Semaphore: ...
    @abstractmethod
    def summary_of(self, node: str, agent: str | None) -> NodeSummaryV1 | None: ...

    def _targets(self) -> tuple[list[tuple[AgentState, str]], list[SimulatedNode]]:
        remote = [(a, n.node) for a in self.agents.values() if a.status == OK for n in a.nodes]
        return remote, list(self.fleet.list())

    async def _fan_out(
        self,
        remote: list[tuple[AgentState, str]],
        call: Callable[[AgentState, str], Awaitable[dict[str, Any]]],
        failed: Failed,
    ) -> list[dict[str, Any]]:
        """Every remote node's answer, in ``remote``'s order: at most ``hub_max_fanout``
        requests, all of them within ``FANOUT_DEADLINES`` answer deadlines."""
        cap = self.settings.hub_max_fanout
        deadline = self.settings.hub_agent_timeout * FANOUT_DEADLINES

        async def one(agent: AgentState, node: str) -> dict[str, Any]:
            async with self.semaphore():
                try:
                    return await call(agent, node)  # the client's deadline bounds each answer
                except AgentError as exc:
                    return failed(node, exc.message)

        tasks = [asyncio.ensure_future(one(a, n)) for a, n in remote[:cap]]
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=deadline)
        finally:  # past the deadline, or the question itself cancelled: nothing left running
            late = {t for t in tasks if not t.done()}
            for t in late:
                t.cancel()
        results = []
        for (agent, node), task in zip(remote[:cap], tasks, strict=True):
            if task in late:
                message = f"not checked: no answer within the question's {deadline:g} s deadline"
                result = failed(node, message, asked=False)
            else:
                result = task.result()
            results.append({**result, "agent": agent.url})
        for agent, node in remote[cap:]:
            message = f"not asked: over the hub's cap of {cap} agent requests per question"
            results.append({**failed(node, message, asked=False), "agent": agent.url})
        return results

    async def fit(
        self, body: bytes, content_type: str, text: str, pod: Pod, strategy: str
    ) -> dict[str, Any]:
        """Every node's dry run of the manifest ``text`` (``pod``: its first pod, as parsed by
        the route), ranked by the scheduler plugin's ``strategy`` (``app.services.fleet_score``)."""
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
        results = rank_fits([*local_results, *remote_results], pod, strategy, self.summary_of)
        return {"strategy": strategy, "results": results, "unreachable": self._unreachable()}

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
                    out.append({**upgrade_error(n.name, message, asked=False), "agent": None})
                else:
                    out.append({**upgrade_result(n.name, n.upgrade(release, gate)), "agent": None})
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
