"""Admission helpers of the simulated-node service: the hint-search budget
(``app.domain.hint_budget``) and the log rows of one submission or removal. Conflicts, dry runs and
admissions themselves are ``app.services.nodes.judge``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from app.adapters.db.tables import (
    ACTION_ADMIT,
    ACTION_DRY_RUN,
    ACTION_REMOVE,
    AdmissionRecord,
    NewLogRow,
    utc_now,
)
from app.domain import hint_budget
from app.domain.node.model import AdmissionResult
from app.domain.node.pods import pod_to_manifest
from app.domain.pod.model import Pod
from app.services.nodes.errors import HintSearchTooLargeError
from app.services.nodes.inputs import at
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
) -> list[NewLogRow]:
    """The log rows of one submission's verdicts (``NodeWrite.add_rows`` writes them)."""
    now = utc_now()
    admitted_at = {} if dry_run else live.node.admitted_at
    return [
        NewLogRow(
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


def removal_record(live: Live, batch: str, pod: Pod) -> AdmissionRecord:
    """The log row of ``pod`` leaving the node (removed, or rejected by a restarted kubelet),
    with its manifest so that an undo can admit it again."""
    return AdmissionRecord(
        node_id=live.record_id,
        batch=batch,
        action=ACTION_REMOVE,
        namespace=pod.namespace,
        name=pod.name,
        uid=pod.uid,
        admitted=True,
        manifest=json.dumps(pod_to_manifest(pod), sort_keys=True),
        created_at=utc_now(),
    )
