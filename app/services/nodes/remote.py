"""A node of one of the hub's agents as a ``NodeSource`` (``RemoteNode``, read-only): the hub
serves its page and JSON twins from the agent's own JSON, so an SRE who reaches only the hub
(``kubectl port-forward svc/numascope-hub``) can open any node of the fleet; pod IPs need not
be reachable from the SRE's machine.

Every answer is the agent's, asked through the hub's agent client (``app.adapters.agents``:
its timeout, byte cap and connection pool) and **validated** with the same view models the
agent rendered it with (``NodeView``, ``NodeDetail``, ``PodView``): a malformed answer is a 503
naming the agent and the field, never a page built from garbage. The pages are rendered by the
hub from the validated model, so their links stay on the hub. The agent's error answers keep
their meaning: its 404 is a 404, its 409 a conflict, its 422 names the field, anything else
(and no answer within the timeout) is a 503 naming the agent.

What only exists in the agent's process (``views()``: the engine's snapshot behind the pods
table and the NodeResourceTopology; a restart rehearsal on its node's files) is not served for
a remote node: those answer 503 saying where to ask. The node page, its JSON twins, its pods'
pages, PodResources, the watch token, dry runs (``AgentDryRun``: the agent's answer as it wrote
it) and the upgrade verdict are the agent's own.

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
from app.services import node_views
from app.services.encoded_json import EncodedJSON, encode
from app.services.nodes.errors import (
    NodeInputError,
    NodeUnavailableError,
    PodConflictError,
    ReadOnlyNodeError,
    RemoteNotFoundError,
)
from app.services.nodes.inputs import AdmissionBatch
from app.services.nodes.restart import Rehearsal

if TYPE_CHECKING:
    from app.services.hub import Hub

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
        raise NodeUnavailableError(f"node {self.node}: its agent {self.agent}: {message}")

    def model(self, model: type[M]) -> M:
        self.raise_for_error()
        try:
            return model.model_validate(self.doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(document)"
            raise NodeUnavailableError(
                f"node {self.node}: its agent {self.agent} answered a {model.__name__} whose "
                f"{where} is invalid: {first['msg']}"
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


class RemoteNode:
    """Node ``name`` of the agent at ``agent`` (see the module docstring)."""

    def __init__(self, name: str, agent: str, client: Callable[[], AgentClient]) -> None:
        self._name = name
        self.agent = agent
        self._client = client

    @property
    def name(self) -> str:
        return self._name

    def _call(
        self, request: Callable[[AgentClient], Coroutine[Any, Any, AgentAnswer]]
    ) -> RemoteAnswer:
        """Run the agent request on the app's event loop (where the hub's client lives) from
        the worker thread a route runs in."""
        try:
            answer = anyio.from_thread.run(request, self._client())
        except AgentError as exc:
            raise NodeUnavailableError(f"node {self._name}: its agent {self.agent} {exc}") from None
        return RemoteAnswer(self._name, self.agent, answer)

    def _get(self, path: str) -> RemoteAnswer:
        return self._call(lambda c: c.node_get(self.agent, self._name, path))

    def _post(self, path: str, body: bytes = b"", content_type: str = "") -> RemoteAnswer:
        return self._call(lambda c: c.node_post(self.agent, self._name, path, body, content_type))

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
            raise NodeUnavailableError(
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

    # -- questions: asked of the agent, whose node's engine decides --------------------------
    def dry_run(self, manifest: str) -> AdmissionBatch:
        """The agent's dry run (its node's own judge), answered as the agent wrote it."""
        body = manifest.encode("utf-8")
        answer = self._post("/api/v1/pods?dryRun=true", body, "application/yaml")
        answer.raise_for_error()
        batch = answer.doc.get("batch")
        if not isinstance(batch, str) or len(batch) > 100:
            raise NodeUnavailableError(
                f"node {self._name}: its agent {self.agent} answered a dry run without its batch"
            )
        return AgentDryRun(self._name, batch, True, (), (), answer.doc)

    def upgrade(self, release: str, gate: bool | None) -> dict[str, Any]:
        params = {"release": release}
        if gate is not None:
            params["podLevelResourceManagers"] = "true" if gate else "false"
        answer = self._get(f"/api/v1/upgrade?{urlencode(params)}")
        answer.raise_for_error()
        return answer.doc

    def rehearse(self, release: str, gate: bool | None) -> Rehearsal:
        raise NodeUnavailableError(
            f"node {self._name} is a node of agent {self.agent}: rehearse its restart there "
            "(its state files stay on its node)"
        )


class RemoteNodes:
    """The hub's agents' nodes by name (the catalog's ``remote`` lookup), indexed once per
    change of the hub's fleet document (``Hub.generation``)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._index: tuple[int, dict[str, str]] = (-1, {})

    def __call__(self, name: str) -> RemoteNode | None:
        generation, index = self._index
        if generation != self.hub.generation:
            generation = self.hub.generation  # read first: a change meanwhile re-indexes
            index = {}
            for agent in sorted(list(self.hub.agents.values()), key=lambda a: a.url):
                for n in agent.nodes:
                    index.setdefault(n.node, agent.url)
            self._index = (generation, index)
        url = index.get(name)
        return None if url is None else RemoteNode(name, url, self.hub.client)
