"""Admission helpers of the simulated-node service: conflicts with pods already on the node,
the hint-search budget (``app.domain.hint_budget``), dry runs of several pods (on a scratch
copy, never on the node itself) and the log rows of one submission.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence

from app.adapters.db.tables import ACTION_ADMIT, ACTION_DRY_RUN, AdmissionRecord, utc_now
from app.domain import hint_budget
from app.domain.node import AdmissionResult
from app.domain.node_pods import pod_to_manifest
from app.domain.node_state import restore_node
from app.domain.node_state_files import NodeStateError, render_state_files
from app.domain.pod import Pod
from app.services.nodes.errors import HintSearchTooLargeError, PodConflictError
from app.services.nodes.inputs import at, build_engine_node
from app.services.nodes.store import Live

HINT_BUDGET_NAME = "this server's budget (NUMASCOPE_HINT_SEARCH_BUDGET)"


@functools.cache
def _merge_rate() -> float:
    """Combinations a second this process examines (measured once, about 0.1 s)."""
    return hint_budget.measure_rate()


def check_hint_budget(live: Live, pods: Sequence[Pod], budget: int | None) -> None:
    """Refuse the submission (``HintSearchTooLargeError``, 422) when a pod's topology-hint
    search is beyond ``budget``, before any search starts; the message says how long the
    search would take on this server."""
    for pod in pods:
        try:
            hint_budget.check_node(live.node, pod, budget, HINT_BUDGET_NAME)
        except hint_budget.HintSearchBudgetError as err:
            took = hint_budget.duration_text(err.search.cost / _merge_rate())
            message = f"{err.message} (here the search would take about {took})"
            raise HintSearchTooLargeError(message, "manifest") from None


def log_records(
    live: Live,
    batch: str,
    pods: Sequence[Pod],
    results: Sequence[AdmissionResult],
    dry_run: bool,
) -> list[AdmissionRecord]:
    now = utc_now()
    admitted_at = {} if dry_run else live.node.admitted_at
    return [
        AdmissionRecord(
            node_id=live.record_id,
            batch=batch,
            action=ACTION_DRY_RUN if dry_run else ACTION_ADMIT,
            namespace=r.namespace,
            name=r.name,
            uid=r.pod_uid,
            admitted=r.admitted,
            reason=r.reason,
            message=r.message,
            manifest=json.dumps(pod_to_manifest(p), sort_keys=True),
            # An admitted pod's row carries the node's admission time (replays use it).
            created_at=at(admitted_at[p.uid]) if p.uid in admitted_at else now,
        )
        for p, r in zip(pods, results, strict=True)
    ]


def check_conflicts(live: Live, pods: Sequence[Pod]) -> None:
    uids: set[str] = set()
    keys: set[str] = set()
    for p in pods:
        # The name first: a manifest without a uid gets one derived from its name, so a
        # second submission of it is a name clash, not a uid the user never wrote.
        if live.node.find_pod(p.key) is not None or p.key in keys:
            raise PodConflictError(
                f"pod {p.key} is already on node {live.definition.name}", "metadata.name"
            )
        if p.uid in live.node.pods or p.uid in uids:
            raise PodConflictError(
                f"pod with uid {p.uid} ({p.key}) is already on node {live.definition.name}",
                "metadata.uid",
            )
        uids.add(p.uid)
        keys.add(p.key)


def dry_run_results(
    live: Live, pods: Sequence[Pod], clock: Callable[[], float]
) -> list[AdmissionResult]:
    if len(pods) == 1:
        return [live.node.dry_run(pods[0])]
    # Several pods: admit them in order on a scratch copy restored from the state files.
    scratch = build_engine_node(live.definition.name, live.topology, live.config, clock)
    try:
        restore_node(
            scratch,
            render_state_files(live.node),
            [(p, live.node.admitted_at.get(uid, 0.0)) for uid, p in live.node.pods.items()],
        )
    except NodeStateError as err:  # the engine cannot read its own files: a bug
        raise RuntimeError(f"dry run: cannot copy node {live.definition.name}: {err}") from err
    return [scratch.admit(p) for p in pods]
