"""The checkpoint report: the inspector's JSON for one kubelet state file
(``POST /api/v1/checkpoints/inspect``, ``/checkpoints.json``'s ``report``,
``numascope checkpoint inspect --json``): the file's version and release family, its
checksums, a verdict per kubelet release (``compatible``, ``compatible-with-loss``,
``will-fail``, ``policy-mismatch``) with what is lost and the kubelet's error text, the
conversions that rescue it, the content, and the issues found.

The inspector checks what it built against ``CheckpointReport``
(``app.services.checkpoints.inspection.InspectionView.to_dict``); the fleet's upgrade rows
carry the ``Rescue``s of their files. The content (``state``, ``inlineState``) keeps the
kubelet's own key names and is bounded as a free-form object.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from app.contracts.base import MAX_ITEMS, Contract, Count, FreeForm, Text, Token

#: Verdicts of one report (one per release and gate), conversions per verdict, notes.
MAX_VERDICTS = 64
TextList = Annotated[list[Text], Field(max_length=MAX_ITEMS)]
#: A checksum as the kubelet stores it (an unsigned 64-bit integer).
Checksum = Annotated[int, Field(ge=0, lt=1 << 64)]


class Rescue(Contract):
    """A conversion that makes the file readable by the target release
    (``numascope checkpoint convert …``)."""

    model_config = ConfigDict(extra="allow")

    to_version: Token | None = None
    verdict: Token | None = None
    lost: Annotated[list[Any], Field(max_length=MAX_ITEMS)] = []
    notes: TextList = []
    command: Text | None = None


class ChecksumRow(Contract):
    field: Token
    stored: Checksum | None
    computed: Checksum | None
    status: Token
    algorithm: Token
    note: Text = ""


class Issue(Contract):
    code: Token
    severity: Token
    message: Text


class ReleaseVerdict(Contract):
    """What a kubelet of ``release`` (and gate) does with the file."""

    target: Token
    label: Text
    release: Token
    gate: bool | None
    verdict: Token
    loaded_as: Token | None
    lost: TextList
    error: Text | None
    message: Text | None
    notes: TextList
    why: Text | None
    lost_pods: TextList
    lost_named: TextList
    rescues: Annotated[list[Rescue], Field(max_length=MAX_VERDICTS)] = []


class CheckpointReport(Contract):
    """One inspected state file."""

    readable: bool
    size: Count
    manager: Token | None
    file: Token | None
    version: Token | None
    label: Text | None
    family: Text | None
    display: Text | None
    header: Text | None
    policy_name: Token | None
    checksums: Annotated[list[ChecksumRow], Field(max_length=MAX_VERDICTS)]
    state: FreeForm | None
    inline_state: FreeForm | None
    verdicts: Annotated[list[ReleaseVerdict], Field(max_length=MAX_VERDICTS)]
    issues: Annotated[list[Issue], Field(max_length=MAX_ITEMS)]
    error: Text | None
    source: Text
    configured_policy: Token | None
    targets: Annotated[list[Token], Field(max_length=MAX_VERDICTS)]
    ok: bool
    problems: TextList
