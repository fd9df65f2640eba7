"""The admission batch: the answer of admitting or dry-running a list of pods on one node
(``POST /api/v1/nodes/{node}/pods[?dryRun=true]``), and the allocation one admitted pod got.

The node writes it (``app.services.nodes.inputs.AdmissionBatch.to_dict`` checks what it built
against ``AdmissionAnswer``); a hub asking a remote agent's node for a dry run parses the
agent's answer with it (``app.services.nodes.remote``), and the fleet's fit rows carry the first
pod's ``Allocation``. The kubelet's verdict fields (``admitted``, ``reason``, ``message``) are
the node's own: ``reason`` is the kubelet's rejection reason (``TopologyAffinityError``,
``UnexpectedAdmissionError``…), ``message`` its text.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from app.contracts.base import MAX_NAME, Contract, Count, LocalPath, Text, Token

#: A NUMA node's id (1,024 NUMA nodes at most, as the summary contract says).
NumaId = Annotated[int, Field(ge=0, lt=1024)]
#: A CPU list in the Linux format (``0-3,8``): 1,024 NUMA nodes of threads at most.
CpuList = Annotated[str, StringConstraints(max_length=16384, pattern=r"^[0-9,\-]*$")]
#: Pods of one batch (a manifest's ``List`` included).
MAX_PODS = 5000
Name = Annotated[str, StringConstraints(max_length=MAX_NAME)]


class MemoryBlock(Contract):
    """A memory manager block of an allocation (the checkpoint's form)."""

    numa_affinity: Annotated[list[NumaId], Field(max_length=1024)]
    type: Token
    size: Count


class ContainerAllocation(Contract):
    name: Name
    kind: Token
    isolation: Token
    cpuset: CpuList
    memory: Annotated[list[MemoryBlock], Field(max_length=64)] = []


class Allocation(Contract):
    """What an admitted pod got: CPU sets and memory blocks."""

    qos_class: Token
    pod_cpuset: CpuList | None = None
    pod_shared_cpuset: CpuList
    pod_memory: Annotated[list[MemoryBlock], Field(max_length=64)] = []
    containers: Annotated[list[ContainerAllocation], Field(max_length=500)] = []


class PodRef(Contract):
    uid: Name
    namespace: Name
    name: Name


class Hint(Contract):
    """The topology manager's merged hint of one container (or the pod): its NUMA nodes
    (``None``: any) and whether it is preferred."""

    numa: Annotated[list[NumaId], Field(max_length=1024)] | None = None
    preferred: bool


class AdmissionRow(Contract):
    """One pod's verdict: ``reason``/``message`` when rejected; its hints, page and allocation
    when admitted."""

    admitted: bool
    pod: PodRef
    reason: Text | None = None
    message: Text | None = None
    hints: Annotated[dict[Name, Hint], Field(max_length=500)] = {}
    url: LocalPath | None = None
    allocation: Allocation | None = None


class AdmissionCounts(Contract):
    admitted: Count
    rejected: Count


class AdmissionAnswer(Contract):
    """The batch: the first rejection's ``reason``/``message`` at the top (a single pod reads
    like one verdict), every pod under ``results``."""

    node: Name
    batch: Annotated[str, StringConstraints(max_length=100)]
    dry_run: bool
    admitted: bool
    reason: Text | None = None
    message: Text | None = None
    summary: AdmissionCounts
    results: Annotated[list[AdmissionRow], Field(max_length=MAX_PODS)]
