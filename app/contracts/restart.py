"""The restart report: a kubelet restart rehearsed (or applied) on one node under a release
(``POST /api/v1/nodes/{node}/restart``, ``numascope restart --json``): whether the kubelet
starts, its error and the recovery steps when it does not, the gates the release refused and
what happens once they are changed (``onceChanged``, itself a report), what its readers lose,
and each pod's outcome (``kept``, ``restored``, ``reallocated``, ``rejected``) with its CPUs and
memory before and after.

The node checks what it built against ``RestartReport``
(``app.services.nodes.restart.Rehearsal.to_dict``); a hub rehearsing a remote agent's node
parses the agent's answer with it (``app.services.nodes.remote``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from app.contracts.admission import CpuList, MemoryBlock, Name
from app.contracts.base import MAX_ITEMS, Contract, Count, Text, Token

TextList = Annotated[list[Text], Field(max_length=MAX_ITEMS)]
Blocks = Annotated[list[MemoryBlock], Field(max_length=64)]


class CpusBeforeAfter(Contract):
    before: CpuList | None
    after: CpuList | None


class MemoryBeforeAfter(Contract):
    before: Blocks
    after: Blocks


class ContainerRestart(Contract):
    name: Name
    before: CpuList | None
    after: CpuList | None
    memory: MemoryBeforeAfter


class PodRestart(Contract):
    pod: Annotated[str, Field(max_length=2 * 253 + 1)]
    uid: Name
    outcome: Token
    reason: Text | None
    message: Text | None
    pod_budget: CpusBeforeAfter
    pod_memory: MemoryBeforeAfter
    containers: Annotated[list[ContainerRestart], Field(max_length=500)]
    leaked_cpus: CpuList | None


class GateRefusal(Contract):
    """A feature gate of the configuration the release refuses: the kubelet's error and what
    to change."""

    gate: Name
    error: Text
    change: Text


class RestartOutcome(Contract):
    """What the restarted kubelet does (``onceChanged`` is one too)."""

    release: Token
    previous_release: Token | None
    feature_gates: Annotated[dict[Name, bool], Field(max_length=512)]
    started: bool
    error: Text | None
    recovery: TextList
    lost: TextList
    lost_pods: TextList
    notes: TextList
    summary: Annotated[dict[Token, Count], Field(max_length=16)]
    pods: Annotated[list[PodRestart], Field(max_length=MAX_ITEMS)]
    leaked_cpus: CpuList
    warnings: TextList
    feature_gates_refused: Annotated[list[GateRefusal], Field(max_length=512)]
    once_changed: RestartOutcome | None


class RestartReport(RestartOutcome):
    """The answer for one node: the outcome, and whether it was a dry run, was applied, was
    rehearsed on an observed node's copy (``note`` says what that means)."""

    node: Name
    dry_run: bool
    applied: bool
    observed: bool
    note: Text | None
