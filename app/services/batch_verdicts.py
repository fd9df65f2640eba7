"""The verdicts of one submission (a ``List`` or several documents admitted or dry-run at once),
totals first (issue 21 point 5): how many pods were (or would be) admitted, how many rejected
and for which reasons, then the verdicts a page at a time, in manifest order.

Read from the node's admission log (``node_repo.batch_totals`` and ``log_rows`` with an
offset): the newest dry-run submission is kept whole there however long it is
(``app.adapters.db.node_repo``), so a 3,000-pod dry run can be paged through to its end.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.adapters.db import node_repo
from app.adapters.db.tables import ACTION_DRY_RUN
from app.services.node_views import AdmissionLogEntry, node_url
from app.services.nodes.errors import NodeInputError
from app.services.nodes.service import NodeService
from app.services.placements import placements

#: Verdicts shown a page at a time (the first page sits under the admission form).
PAGE_SIZE = 25
MAX_PAGE_SIZE = 500


class ReasonCount(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    reason: str
    count: int


class BatchVerdicts(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    node: str
    batch: str
    dry_run: bool
    total: int
    admitted: int
    rejected: int
    by_reason: list[ReasonCount]  # rejections by the kubelet's reason, most first
    page: int
    pages: int
    page_size: int
    first: int  # 1-based position of the page's first verdict (0 when there is none)
    entries: list[AdmissionLogEntry]  # this page's verdicts, in manifest order
    url: str  # the page of all the verdicts

    @property
    def multi(self) -> bool:
        return self.total > 1


def batch_verdicts(
    service: NodeService, node: str, batch: str, page: int = 1, page_size: int = PAGE_SIZE
) -> BatchVerdicts:
    """Totals and one page of the verdicts of submission ``batch`` on ``node`` (an unknown
    batch, or one whose rows are gone: no verdicts)."""
    if page < 1:
        raise NodeInputError(f"page: must be 1 or more, got {page}", "page")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise NodeInputError(
            f"pageSize: must be between 1 and {MAX_PAGE_SIZE}, got {page_size}", "pageSize"
        )
    totals = (
        node_repo.batch_totals(service.registry.engine, service.registry.log_node_id(node), batch)
        if node in service.registry.simulated_names()
        else []
    )
    total = sum(n for _, _, n in totals)
    admitted = sum(n for ok, _, n in totals if ok)
    pages = max(1, -(-total // page_size))
    page = min(page, pages)
    offset = (page - 1) * page_size
    entries = (
        service.reads.admissions(node, batch=batch, limit=page_size, offset=offset) if total else []
    )
    return BatchVerdicts(
        node=node,
        batch=batch,
        dry_run=bool(entries) and entries[0].action == ACTION_DRY_RUN,
        total=total,
        admitted=admitted,
        rejected=total - admitted,
        by_reason=[ReasonCount(reason=r, count=n) for ok, r, n in totals if not ok],
        page=page,
        pages=pages,
        page_size=page_size,
        first=offset + 1 if entries else 0,
        entries=entries,
        url=f"{node_url(node)}/batches/{batch}",
    )


def batch_context(service: NodeService, node: str, batch: str | None) -> dict[str, Any]:
    """What a page showing a submission's verdicts needs: ``batch_verdicts`` (totals and the
    first page) and the ``placements`` of that page's admitted pods."""
    if not batch:
        return {"batch_verdicts": None, "placements": {}}
    verdicts = batch_verdicts(service, node, batch)
    return {
        "batch_verdicts": verdicts,
        "placements": placements(service, node, verdicts.entries),
    }
