"""A node of one of the hub's agents as a ``NodeSource`` (``RemoteNode``, read-only): the hub
serves its page and JSON twins from the agent's own JSON, so an SRE who reaches only the hub
(``kubectl port-forward svc/numascope-hub``) can open any node of the fleet; pod IPs need not
be reachable from the SRE's machine.

Every answer is the agent's, asked through the hub's agent client (``app.adapters.agents``:
its timeout, byte cap and connection pool) and **validated** with the same view models the
agent rendered it with (``NodeView``, ``NodeDetail``, ``PodView``): a malformed answer is
refused naming the agent and the field (``AgentUnreachableError``: 424, reason
``AgentUnreachable``, as the fleet's rows say it), never a page built from garbage and never a
5xx of the hub's. The pages are rendered by the
hub from the validated model, so their links stay on the hub. The agent's error answers keep
their meaning: its 404 is a 404, its 409 a conflict, its 422 names the field, anything else
(and no answer within the timeout) is ``AgentUnreachableError`` naming the agent.

What only exists in the agent's process (``views()``: the engine's snapshot behind the pods
table) is not served for a remote node: it answers 503 saying where to ask. The node page, its
JSON twins, its pods' pages, PodResources, the NodeResourceTopology (built by the agent, with
its own fingerprint method), the watch token, dry runs (``AgentDryRun``, checked against
``app.contracts.admission.AdmissionAnswer``), the upgrade verdict and the restart rehearsal
(``AgentRehearsal``, checked against ``app.contracts.restart.RestartReport``; the panel shows
it over the node's map as the agent answered it) are the agent's own.

``RemoteNodes`` looks names up among the hub's agents' last summaries (the first agent, by
URL, that reports a node answers for it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlencode

import anyio.from_thread
from pydantic import BaseModel, ValidationError

from app.adapters.agents import AgentAnswer, AgentClient, AgentError
from app.contracts import restart as restart_contract
from app.contracts.admission import AdmissionAnswer, MemoryBlock
from app.contracts.base import contract_error
from app.domain.cpuset import CPUSet
from app.domain.restart import (
    BlockKey,
    ContainerRestart,
    GateRefusal,
    PodRestart,
    RestartResult,
)
from app.services import node_views
from app.services.encoded_json import EncodedJSON, encode
from app.services.nodes.errors import (
    AgentUnreachableError,
    NodeInputError,
    NodeUnavailableError,
    PodConflictError,
    ReadOnlyNodeError,
    RemoteNotFoundError,
)
from app.services.nodes.inputs import AdmissionBatch
from app.services.nodes.restart import Rehearsal

if TYPE_CHECKING:
    from app.services.fleet.agents import AgentDirectory

M = TypeVar("M", bound=BaseModel)


class RemoteAnswer:
    """What a remote node's agent answered, already checked: a JSON object."""

    def __init__(self, node: str, agent: str, answer: AgentAnswer) -> None:
        self.node = node
        self.agent = agent
        self.status = answer.status
        self.doc: dict[str, Any] = answer.doc or {}

    def raise_for_error(self) -> None:
        """The agent's error answer as the same error here."""
        if self.status < 300:
            return
        error = self.doc.get("error")
        error = error if isinstance(error, dict) else {}
        message = error.get("message")
        message = message[:2000] if isinstance(message, str) else f"HTTP {self.status}"
        field = error.get("field")
        field = field[:200] if isinstance(field, str) else None
        if self.status == 404:
            raise RemoteNotFoundError(message)
        if self.status == 409:
            raise PodConflictError(message, field or "metadata.name")
        if self.status == 422:
            raise NodeInputError(message, field or "manifest")
        raise AgentUnreachableError(f"node {self.node}: its agent {self.agent}: {message}")

    def document(self) -> dict[str, Any]:
        """The answer as the agent gave it (bounded by the agent client's JSON limits)."""
        self.raise_for_error()
        return self.doc

    def model(self, model: type[M]) -> M:
        """The answer as ``model`` (its contract); one that breaks it is refused naming the
        field (``AgentUnreachableError``: the agent is not one this hub can use)."""
        self.raise_for_error()
        try:
            return model.model_validate(self.doc)
        except ValidationError as exc:
            err = contract_error(exc)
            raise AgentUnreachableError(
                f"node {self.node}: its agent {self.agent} answered a {model.__name__} whose "
                f"{err.field or '(document)'} breaks the contract: {err.problem}",
                err.field or None,
            ) from None


@dataclass(frozen=True, slots=True)
class AgentDryRun(AdmissionBatch):
    """A remote node's dry run: the agent's answer as it wrote it (its verdicts are its node's
    engine's), with the batch id its node page shows the verdicts under."""

    answer: dict[str, Any] = field(default_factory=dict)

    @property
    def admitted(self) -> int:
        summary = self.answer.get("summary")
        count = summary.get("admitted") if isinstance(summary, dict) else None
        return count if isinstance(count, int) and not isinstance(count, bool) else 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.answer)


@dataclass(frozen=True, slots=True)
class AgentRehearsal(Rehearsal):
    """A remote node's restart rehearsal: the agent's answer as it wrote it (its node's files
    and release decide), with the outcome rebuilt for the node page's panel."""

    answer: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.answer)


def _cpus(text: str | None) -> CPUSet | None:
    return None if text is None else CPUSet.parse(text)


def _blocks(blocks: list[MemoryBlock]) -> tuple[BlockKey, ...]:
    return tuple((tuple(b.numa_affinity), b.type, b.size) for b in blocks)


def _pod_restart(p: restart_contract.PodRestart) -> PodRestart:
    namespace, _, name = p.pod.partition("/")
    return PodRestart(
        p.uid,
        namespace,
        name,
        p.outcome,
        p.reason or "",
        p.message or "",
        _cpus(p.pod_budget.before),
        _cpus(p.pod_budget.after),
        _blocks(p.pod_memory.before),
        _blocks(p.pod_memory.after),
        tuple(
            ContainerRestart(
                c.name,
                _cpus(c.before),
                _cpus(c.after),
                _blocks(c.memory.before),
                _blocks(c.memory.after),
            )
            for c in p.containers
        ),
        _cpus(p.leaked_cpus),
    )


def restart_result(o: restart_contract.RestartOutcome) -> RestartResult:
    """The outcome of a restart report as the domain's ``RestartResult`` (no engine: the node
    the restarted kubelet runs stays on its agent)."""
    return RestartResult(
        release=o.release,
        gates=dict(o.feature_gates),
        started=o.started,
        error=o.error,
        recovery=tuple(o.recovery),
        lost=tuple(o.lost),
        pods=tuple(_pod_restart(p) for p in o.pods),
        previous_release=o.previous_release,
        lost_pods=tuple(o.lost_pods),
        notes=tuple(o.notes),
        refusals=tuple(GateRefusal(r.gate, r.error, r.change) for r in o.feature_gates_refused),
        once_changed=None if o.once_changed is None else restart_result(o.once_changed),
        leaked_cpus=CPUSet.parse(o.leaked_cpus),
        warnings=tuple(o.warnings),
    )


def _release_params(release: str, gate: bool | None) -> dict[str, str]:
    """The query of a question about a kubelet of ``release`` (``gate``: the pod-level
    resource managers gate as set, or as the node's configuration has it)."""
    params = {"release": release}
    if gate is not None:
        params["podLevelResourceManagers"] = "true" if gate else "false"
    return params


class RemoteNode:
    """Node ``name`` of the agent at ``agent`` (see the module docstring)."""

    def __init__(self, name: str, agent: str, client: Callable[[], AgentClient]) -> None:
        self._name = name
        self.agent = agent
        self._client = client

    @property
    def name(self) -> str:
        return self._name

    async def ask(
        self, request: Callable[[AgentClient], Coroutine[Any, Any, AgentAnswer]]
    ) -> RemoteAnswer:
        """The agent's answer to ``request`` (no answer: ``AgentUnreachableError`` naming the
        agent, and the field of its answer that broke the contract, if that was why)."""
        try:
            answer = await request(self._client())
        except AgentError as exc:
            raise AgentUnreachableError(
                f"node {self._name}: its agent {self.agent} {exc}", exc.field
            ) from None
        return RemoteAnswer(self._name, self.agent, answer)

    def _call(
        self, request: Callable[[AgentClient], Coroutine[Any, Any, AgentAnswer]]
    ) -> RemoteAnswer:
        """``ask`` on the app's event loop (where the hub's client lives), from the worker
        thread a route runs in."""
        return anyio.from_thread.run(self.ask, request)

    def _get(self, path: str) -> RemoteAnswer:
        return self._call(lambda c: c.node_get(self.agent, self._name, path))

    def _post(self, path: str, body: bytes = b"", content_type: str = "") -> RemoteAnswer:
        return self._call(lambda c: c.node_post(self.agent, self._name, path, body, content_type))

    # -- the questions the fleet asks every node (``app.services.fleet.fanout``) --------------
    async def ask_dry_run(self, body: bytes, content_type: str) -> RemoteAnswer:
        """The agent's answer to a dry run of the manifest ``body``, errors included."""
        path = "/api/v1/pods?dryRun=true"
        return await self.ask(
            lambda c: c.node_post(self.agent, self._name, path, body, content_type)
        )

    async def ask_upgrade(self, release: str, gate: bool | None) -> RemoteAnswer:
        """The agent's upgrade verdict for a kubelet of ``release``, errors included."""
        path = f"/api/v1/upgrade?{urlencode(_release_params(release, gate))}"
        return await self.ask(lambda c: c.node_get(self.agent, self._name, path, work=True))

    # -- views -------------------------------------------------------------------------------
    def views(self) -> node_views.NodeViews:
        raise NodeUnavailableError(
            f"node {self._name} is a node of agent {self.agent}: its engine's snapshot stays "
            "there (open its page, JSON, pods and PodResources through this hub)"
        )

    def summary(self) -> node_views.NodeSummary:
        return self.node_detail().summary

    def node_view(self, *, batch: str | None = None) -> node_views.NodeView:
        query = f"?{urlencode({'batch': batch})}" if batch else ""
        return self._get(f".json{query}").model(node_views.NodeView)

    def node_view_json(self, *, batch: str | None = None) -> EncodedJSON:
        return encode(self.node_view(batch=batch))

    def node_detail(self) -> node_views.NodeDetail:
        return self._get("/api/v1").model(node_views.NodeDetail)

    def node_detail_json(self) -> EncodedJSON:
        return encode(self.node_detail())

    def pod_view(self, namespace: str, name: str) -> node_views.PodView:
        path = f"/pods/{quote(namespace, safe='')}/{quote(name, safe='')}.json"
        return self._get(path).model(node_views.PodView)

    def pod_view_json(self, namespace: str, name: str) -> EncodedJSON:
        return encode(self.pod_view(namespace, name))

    def admissions(
        self, *, limit: int = 100, batch: str | None = None
    ) -> list[node_views.AdmissionLogEntry]:
        return self.node_view().admissions[:limit]

    def state_files(self) -> dict[str, str]:
        raise ReadOnlyNodeError(
            self._name,
            "render state files for it (download the kubelet's)",
            kind="a node of the fleet",
        )

    def watch_token(self) -> tuple[str, str]:
        answer = self._get("/api/v1/watch")
        answer.raise_for_error()
        token = answer.doc.get("token")
        if not isinstance(token, str) or len(token) > 200:
            raise AgentUnreachableError(
                f"node {self._name}: its agent {self.agent} answered a watch token that is "
                "not a short string"
            )
        return "remote", f"r-{token}"

    # -- PodResources: the agent's answer, re-encoded ----------------------------------------
    def _document(self, path: str) -> EncodedJSON:
        answer = self._get(path)
        answer.raise_for_error()
        return encode(answer.doc)

    def podresources_list_json(self) -> EncodedJSON:
        return self._document("/api/v1/podresources")

    def podresources_get_json(self, namespace: str, name: str) -> EncodedJSON:
        return self._document(
            f"/api/v1/podresources/{quote(namespace, safe='')}/{quote(name, safe='')}"
        )

    def allocatable_json(self) -> EncodedJSON:
        return self._document("/api/v1/allocatable")

    def nrt(self, fingerprint_method: str) -> dict[str, Any]:
        """The agent's NodeResourceTopology of the node (its fingerprint method, not the
        hub's: the object is the one its agent would publish)."""
        doc = self._get("/api/v1/noderesourcetopology").document()
        if doc.get("kind") != "NodeResourceTopology":
            raise AgentUnreachableError(
                f"node {self._name}: its agent {self.agent} answered a NodeResourceTopology "
                "whose kind breaks the contract",
                "kind",
            )
        return doc

    # -- questions: asked of the agent, whose node's engine decides --------------------------
    def dry_run(self, manifest: str) -> AdmissionBatch:
        """The agent's dry run (its node's own judge), answered as the agent wrote it."""
        body = manifest.encode("utf-8")
        answer = anyio.from_thread.run(self.ask_dry_run, body, "application/yaml")
        checked = answer.model(AdmissionAnswer)
        return AgentDryRun(self._name, checked.batch, True, (), answer.doc)

    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        return anyio.from_thread.run(self.ask_upgrade, release, gate).document()

    def rehearse(self, release: str, gate: bool | None) -> Rehearsal:
        """The agent's rehearsal (its node's files, its release's readers), shown over the
        node's map as the agent draws it now."""
        params = {**_release_params(release, gate), "dryRun": "true"}
        answer = self._post(f"/api/v1/restart?{urlencode(params)}")
        report = answer.model(restart_contract.RestartReport)
        before = self.node_view().map
        return AgentRehearsal(
            self._name,
            restart_result(report),
            True,
            False,
            before,
            None,
            observed=report.observed,
            note=report.note,
            answer=answer.doc,
        )


class RemoteNodes:
    """The hub's agents' nodes by name (the catalog's ``remote`` lookup and the fleet's
    targets), indexed once per change of the hub's fleet document (``Hub.generation``).

    A name two agents report is answered by one of them: a reachable agent before one that is
    not, then the first by URL (the hub lists the claim as a finding)."""

    def __init__(self, hub: AgentDirectory) -> None:
        self.hub = hub
        self._index: tuple[int, dict[str, tuple[str, bool]]] = (-1, {})

    def _current(self) -> dict[str, tuple[str, bool]]:
        generation, index = self._index
        if generation != self.hub.generation:
            generation = self.hub.generation  # read first: a change meanwhile re-indexes
            index = {}
            agents = sorted(list(self.hub.agents.values()), key=lambda a: (not a.ok, a.url))
            for agent in agents:
                for n in agent.nodes:
                    index.setdefault(n.node, (agent.url, agent.ok))
            self._index = (generation, index)
        return index

    def __call__(self, name: str) -> RemoteNode | None:
        found = self._current().get(name)
        return None if found is None else RemoteNode(name, found[0], self.hub.client)

    def reachable(self) -> list[RemoteNode]:
        """Every node a reachable agent answers for: what a fleet question goes to."""
        return [
            RemoteNode(name, url, self.hub.client)
            for name, (url, ok) in self._current().items()
            if ok
        ]
