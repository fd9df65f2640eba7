"""A page per rejected admission attempt: the numbers behind the kubelet's verdict.

The node's state at decision time is rebuilt by replaying its admission log up to the
rejected entry (``app.services.history.replay``), so the explanation survives reloads and restarts
and needs no snapshot stored with the attempt. ``app.domain.explain`` then computes the free
CPUs and memory per NUMA node, each hint provider's hints, the merged hint and the smallest
changes that would have fitted. The replayed verdict is checked against the logged one; a
difference (a log edited by hand, state files restored from elsewhere) is shown, not hidden.

A pod with a pod budget (KEP-5526) is described by its budget (``budget_of``: "a 4-CPU budget
of which 3+1 are exclusive") and, when its containers do not fit that budget, the page names
that cause (``budget_cause``) rather than the NUMA nodes: the kubelet's
``validatePodScopeResources`` (pkg/kubelet/cm/cpumanager/policy_static.go, and the memory
manager's twin) fails for such a pod whatever is free. How the kubelet *reports* it depends
on the topology manager policy, as ``GetPodTopologyHints`` and ``AllocatePod`` of
policy_static.go decide (read on master; 1.36 and 1.37 have the same code paths, and the
release table holds no difference): the hint provider returns an empty hint list, so
``restricted`` and ``single-numa-node`` reject the pod with ``TopologyAffinityError`` before
any allocation; ``best-effort`` admits it to allocation, where ``AllocatePod`` fails with
``EmptyPodSharedPoolError`` and the budget message. The engine does exactly this (checked for
1.36, 1.37 and 1.38 in tests/web/test_web_rejection_cause.py), so the demo's single-numa-node
node reports ``TopologyAffinityError`` and the glossary now says which reason when.
"""

from __future__ import annotations

import yaml
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db.tables import ACTION_DRY_RUN, ACTION_REMOVE
from app.domain import units
from app.domain.cpumanager.pod_scope import guaranteed_cpus, validate_pod_scope_resources
from app.domain.explain import Explanation, explain_rejection
from app.domain.node.model import Node
from app.domain.pod.budget import PodBudgetError
from app.domain.pod.model import Container, Pod
from app.domain.pod.qos import is_container_equivalent_qos_guaranteed
from app.domain.topologymanager.hint import TopologyHint
from app.services.history.replay import (
    Builder,
    LogRow,
    UnknownEntryError,
    find_entry,
    find_row,
    log_rows,
    replay,
)
from app.services.node_views import iso, node_url
from app.services.nodes.service import NodeService

_REASON_HINTS = {
    "SMTAlignmentError": (
        "full-pcpus-only: the request is not a multiple of the hardware threads per core, or "
        "there are not enough free whole cores."
    ),
    "EmptyPodSharedPoolError": (
        "The exclusive containers take the whole pod budget, so the shared containers would "
        "have no CPUs or memory left."
    ),
    "UnexpectedAdmissionError": (
        "An allocation failed after the hints were merged, e.g. not enough free CPUs or memory "
        "where the hint points."
    ),
}


def reason_hint(reason: str, policy: str, pod_level: bool) -> str:
    """What a reason means for this pod (the pod-level text only for a pod budget)."""
    if reason == "TopologyAffinityError":
        if pod_level:
            return (
                f"The topology manager (policy {policy}) found no NUMA placement it accepts "
                "for the pod budget. With pod-level resources the providers give no hint "
                "either when the budget leaves no CPUs or memory for the shared containers, "
                "or when an init container does not fit the budget: compare the free "
                "numbers below with the budget before suspecting the node."
            )
        return (
            f"The topology manager (policy {policy}) found no NUMA placement it accepts: no "
            "set of NUMA nodes the policy allows had enough free CPUs and memory for the "
            "request."
        )
    return _REASON_HINTS.get(reason, "")


class _View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class NumaFreeView(_View):
    numa_node: int
    cpus: int
    free_cpus: str
    free_cpu_count: int
    free_memory: dict[str, int]
    enough_cpus: bool  # this NUMA node alone has the CPUs the pod asks for
    enough_memory: bool  # … and the memory


class ProviderHintsView(_View):
    provider: str
    # resource -> hint texts; None: no preference; []: no possible placement
    resources: dict[str, list[str] | None]


class UnitView(_View):
    unit: str
    providers: list[ProviderHintsView]
    merged: str
    admit: bool
    error: str = ""


class SuggestionView(_View):
    kind: str
    text: str


class DivergenceView(_View):
    """Where the documentation and the kubelet's code disagree about this verdict."""

    key: str
    title: str
    docs_say: str
    code_does: str
    upstream_file: str
    upstream_url: str
    docs_url: str
    docs_title: str


class BudgetShare(_View):
    container: str
    amount: int  # CPUs, or bytes of memory


class BudgetView(_View):
    """One resource of a pod budget: how much, and which containers take slices of it."""

    resource: str  # "cpu" | "memory"
    budget: int  # CPUs, or bytes
    exclusive: list[BudgetShare]  # long-running containers with an exclusive slice
    shared: list[str]  # long-running containers that run in the pod shared pool
    text: str  # "a 4-CPU budget of which 3+1 are exclusive"
    violation: str = ""  # the kubelet's budget message when the containers do not fit


class RejectionView(_View):
    node: str
    node_url: str
    entry: int  # its number in the node's own log (History's #): this page's address
    id: int  # the log row's global id (the address of old links, which redirect)
    at: str
    action: str
    pod: str
    reason: str
    message: str
    hint: str
    manifest_yaml: str
    policy: str
    scope: str
    pod_level: bool
    requested_cpus: int
    requested_memory: dict[str, int]
    numa: list[NumaFreeView]
    units: list[UnitView]
    replayed_reason: str
    replay_matches: bool
    suggestions: list[SuggestionView]
    before_url: str  # the CPU map just before the attempt
    divergences: list[DivergenceView] = []
    budgets: list[BudgetView] = []  # a pod budget, per resource (pod-level pods)
    cause: str = ""  # the actual cause, when it is not where the pod could be placed


def _long_running(pod: Pod) -> list[Container]:
    return [*(c for c in pod.init_containers if c.is_sidecar), *pod.containers]


def _whole(resource: str, budget: int) -> str:
    return f"{budget}-CPU" if resource == "cpu" else f"{units.format_bytes(budget)} memory"


def _budget_text(resource: str, budget: int, exclusive: list[BudgetShare]) -> str:
    def amount(n: int) -> str:
        return str(n) if resource == "cpu" else units.format_bytes(n)

    whole = _whole(resource, budget)
    if not exclusive:
        return f"a {whole} budget, all of it the pod shared pool"
    parts = "+".join(amount(s.amount) for s in exclusive)
    verb = "is" if len(exclusive) == 1 else "are"
    return f"a {whole} budget of which {parts} {verb} exclusive"


def _budget_view(
    resource: str, budget: int, shares: list[BudgetShare], violation: str
) -> BudgetView:
    """A pod budget of ``resource``: the containers' exclusive shares (largest first) and the
    containers that run in the pod's shared pool."""
    exclusive = sorted((s for s in shares if s.amount), key=lambda s: -s.amount)
    return BudgetView(
        resource=resource,
        budget=budget,
        exclusive=exclusive,
        shared=[s.container for s in shares if not s.amount],
        text=_budget_text(resource, budget, exclusive),
        violation=violation,
    )


def budget_of(node: Node, pod: Pod) -> list[BudgetView]:
    """The pod budget per resource (cpu; memory under the Static memory manager), with the
    kubelet's budget message when the containers do not fit it."""
    if pod.resources is None:
        return []
    gates = node.config.gates()
    out: list[BudgetView] = []
    cpu_budget = pod.resources.request("cpu").milli_value() // 1000
    if node.cpu_policy is not None and cpu_budget:
        shares = [
            BudgetShare(container=c.name, amount=guaranteed_cpus(pod, c, gates))
            for c in _long_running(pod)
        ]
        violation = ""
        try:
            validate_pod_scope_resources(pod, gates)
        except PodBudgetError as err:
            violation = err.message
        out.append(_budget_view("cpu", cpu_budget, shares, violation))
    memory = node.memory
    mem_budget = pod.resources.request("memory").value()
    if memory is not None and mem_budget:
        policy = memory.policy
        shares = [
            BudgetShare(
                container=c.name,
                amount=c.resources.request("memory").value()
                if is_container_equivalent_qos_guaranteed(c)
                else 0,
            )
            for c in _long_running(pod)
        ]
        error = getattr(policy, "pod_scope_budget_error", None)
        found = error(pod) if callable(error) else None
        violation = found.message if isinstance(found, PodBudgetError) else ""
        out.append(_budget_view("memory", mem_budget, shares, violation))
    return out


def budget_cause(budgets: list[BudgetView], policy: str, scope: str) -> str:
    """The actual cause of a pod-level rejection when the budget itself does not fit its
    containers (empty when it does); how the kubelet reports it under ``policy``."""
    broken = [b for b in budgets if b.violation]
    if not broken:
        return ""
    what = {"cpu": "CPU", "memory": "memory"}
    sentences = []
    for b in broken:
        takers = ", ".join(
            f"{s.container} ({s.amount if b.resource == 'cpu' else units.format_bytes(s.amount)})"
            for s in b.exclusive
        )
        if "shared containers" in b.violation and b.shared:
            needs = ", ".join(b.shared)
            sentences.append(
                f"No {what[b.resource]} left for the pod shared pool: the exclusive containers "
                f"{takers} take the whole {_whole(b.resource, b.budget)} budget, and "
                f"{needs} must run in the pod shared pool."
            )
        else:
            sentences.append(f"The pod budget does not fit its containers: {b.violation}.")
    hints_reject = policy in ("restricted", "single-numa-node") and scope == "pod"
    if hints_reject:
        sentences.append(
            "The kubelet checks this before placing anything: its hint providers return an "
            f"empty hint list for such a pod, so the {policy} policy rejects it with "
            "TopologyAffinityError whatever is free on the node (under best-effort the same "
            "pod reaches allocation and is rejected with EmptyPodSharedPoolError)."
        )
    elif policy == "best-effort":
        sentences.append(
            "The kubelet rejects such a pod at allocation with EmptyPodSharedPoolError "
            "whatever is free on the node (under restricted or single-numa-node it is "
            "rejected earlier, at hint time, with TopologyAffinityError)."
        )
    return " ".join(sentences)


def hint_text(h: TopologyHint) -> str:
    numa = h.numa_ids()
    where = "any NUMA node (no affinity)" if numa is None else "NUMA " + ",".join(map(str, numa))
    return f"{where}{' · preferred' if h.preferred else ''}"


def _numa_views(ex: Explanation) -> list[NumaFreeView]:
    """Each NUMA node's free CPUs and memory, and whether they cover the pod's request."""
    need_mem = ex.requested_memory
    return [
        NumaFreeView(
            numa_node=n.numa_node,
            cpus=n.cpus,
            free_cpus=str(n.free_cpus),
            free_cpu_count=n.free_cpus.size(),
            free_memory=n.free_memory,
            enough_cpus=n.free_cpus.size() >= ex.requested_cpus,
            enough_memory=all(n.free_memory.get(k, 0) >= v for k, v in need_mem.items())
            if n.free_memory
            else True,
        )
        for n in ex.numa
    ]


def _unit_views(ex: Explanation) -> list[UnitView]:
    """Each admission unit's hints per provider and resource, merged hint and verdict."""
    return [
        UnitView(
            unit=u.unit,
            providers=[
                ProviderHintsView(
                    provider=p.provider,
                    resources={
                        res: None if hs is None else [hint_text(h) for h in hs]
                        for res, hs in p.hints.items()
                    },
                )
                for p in u.providers
            ],
            merged=hint_text(u.merged),
            admit=u.admit,
            error=u.error,
        )
        for u in ex.units
    ]


def _divergence_views(ex: Explanation) -> list[DivergenceView]:
    return [
        DivergenceView(
            key=d.key,
            title=d.title,
            docs_say=d.docs_say,
            code_does=d.code_does,
            upstream_file=d.upstream_file,
            upstream_url=d.upstream_url,
            docs_url=d.docs_url,
            docs_title=d.docs_title,
        )
        for d in ex.divergences
    ]


def explain_entry(service: NodeService, node: str, entry: int) -> RejectionView:
    """The explanation of the rejected entry numbered ``entry`` in ``node``'s log."""
    rows = log_rows(service, node)
    row = _rejected(node, find_entry(rows, node, entry), entry)
    builder = Builder(service, node)
    batch = row.batch if row.action == ACTION_DRY_RUN else ""
    state = replay(builder, rows, before=row.id, batch=batch)
    pod = builder.pod(row)
    ex = explain_rejection(state, pod, row.manifest, builder)
    base = node_url(node)
    _, reason, _message = ex.verdict
    budgets = budget_of(state, pod) if ex.pod_level else []
    return RejectionView(
        node=node,
        node_url=base,
        entry=row.seq,
        id=row.id,
        at=iso(row.at),
        action=row.action,
        pod=row.key,
        reason=row.reason,
        message=row.message,
        hint=reason_hint(row.reason, ex.policy, ex.pod_level),
        manifest_yaml=yaml.safe_dump(row.manifest, sort_keys=False),
        policy=ex.policy,
        scope=ex.scope,
        pod_level=ex.pod_level,
        requested_cpus=ex.requested_cpus,
        requested_memory=ex.requested_memory,
        numa=_numa_views(ex),
        units=_unit_views(ex),
        replayed_reason=reason,
        replay_matches=(not ex.verdict[0]) and reason == row.reason,
        suggestions=[SuggestionView(kind=s.kind, text=s.text) for s in ex.suggestions],
        before_url=f"{base}/history/{_previous_change(rows, row.id)}",
        divergences=_divergence_views(ex),
        budgets=budgets,
        cause=budget_cause(budgets, ex.policy, ex.scope),
    )


def _previous_change(rows: list[LogRow], entry: int) -> int:
    """The number (``seq``) of the last change logged before the row of global id ``entry``."""
    prev = 0
    for r in rows:
        if r.id >= entry:
            break
        if r.changes_node:
            prev = r.seq
    return prev


def latest_rejection(service: NodeService, node: str, namespace: str, name: str) -> int | None:
    """The number (``seq``) of the newest rejected attempt of ``namespace/name`` on ``node``,
    if any."""
    for r in reversed(log_rows(service, node)):
        if r.namespace == namespace and r.name == name and r.action != ACTION_REMOVE:
            return None if r.admitted else r.seq
    return None


def entry_of_id(service: NodeService, node: str, row_id: int) -> int:
    """The number (``seq``) in ``node``'s log of the rejected row of global id ``row_id`` (an
    old rejection link's address)."""
    return _rejected(node, find_row(log_rows(service, node), node, row_id), row_id).seq


def _rejected(node: str, row: LogRow, asked: int) -> LogRow:
    """``row``, if it is a rejected attempt (``asked``: the number it was asked by)."""
    if row.admitted or row.action == ACTION_REMOVE:
        raise UnknownEntryError(node, asked, "rejected admission")
    return row
