"""The demo fleet's fleet-wide questions (fit, upgrade readiness) answered in worker processes,
so that the hub's event loop and its threads stay free for ``/healthz`` and the pages while
thousands of dry runs and start-up checks run (issue 20: a fit over 5,000 nodes in 1 s, the
upgrade readiness of 5,000 nodes in one call, ``/healthz`` within 100 ms meanwhile).

**One process per shard.** ``FleetWorkers`` starts one single-process executor per shard
(``shards``: the CPUs this process may run on, ``os.sched_getaffinity``); each demo-fleet node
lives in exactly one worker, the nodes of one machine, configuration and release in the same
one (``shard_owners``: they are the nodes a fit's dry runs are shared among), the shards of
about equal size. A plain ``ProcessPoolExecutor`` of N processes could send any node's work to
any process, and each would end up holding the whole fleet.

**The nodes are rebuilt from the seed, not shipped.** A worker replays the seed's draws for
every node (cheap: ``demo_fleet.plan_node``) and builds the engines of its shard only
(``DemoFleet.build(shard, owner=…)``), giving exactly the hub's nodes (the fleet is a function
of its seed and size) without pickling thousands of engines through a pipe or forking a
process that runs an event loop and threads. The workers start with ``spawn`` and lower their
scheduling priority (``WORKER_NICE``) so the hub's event loop wins the CPU when both want it.

Each node answers through its ``NodeSource`` methods (``dry_run`` via ``DemoFleet.dry_run_all``,
``upgrade``), so the rows are the ones the node's own page and API give; the fit rows are
scored, encoded and ranked in the worker too (``app.services.fleet.ranked``: the hub only
merges bytes). The fleet never changes once built, so a fit of the same manifest and strategy
is answered from ``FIT_CACHE`` entries, and each node keeps its upgrade verdicts per release
and gate (``SimulatedNode.upgrade``).

Time budgets count CPU time: a worker's fit runs under ``deadline.within`` (the thread's CPU
time); nodes it does not reach are rows with ``checked`` false, never refusals.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import multiprocessing
import os
import random
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from typing import Any

from app.adapters.heap import release_free_heap
from app.domain import deadline
from app.domain.checkpoint import CPU_FILE_NAME, MEMORY_FILE_NAME
from app.domain.node.state_files import render_state_files
from app.domain.pod.model import Pod
from app.services.fleet.agent_summary import SummaryCache
from app.services.fleet.ranked import CHECKED, Entry, entry, merged, ranked
from app.services.fleet.rows import fit_error, fit_result, upgrade_result
from app.services.fleet.score import ScoreBasis, node_score, placement_flags, scored
from app.services.nodes.demo_fleet import DemoFleet, SimulatedNode, node_name, plan_node
from app.services.nodes.errors import NodeServiceError
from app.services.nodes.inputs import parse_manifests
from app.services.upgrade import SharedChecks, UpgradeInputError

#: Fits kept per (manifest, strategy): the demo fleet never changes once built. At 5,000
#: nodes a fit's rows are about 5 MiB of JSON: the bytes bound keeps three, which is what the
#: hub's memory goal leaves for them (``deploy/hub.yaml``).
FIT_CACHE = 16
FIT_CACHE_BYTES = 16 << 20
#: Nodes per upgrade task: answers arrive (and the page fills in) this many at a time.
UPGRADE_CHUNK = 100
WORKER_NICE = 5
#: How often a worker looks whether the hub is still there.
ORPHAN_CHECK_S = 1.0
MAX_WORKERS = 8

# -- in the worker process ------------------------------------------------------------------

_fleet: DemoFleet | None = None
#: What each node's score reads of its summary (the summaries themselves are not kept).
_bases: dict[str, ScoreBasis] = {}
_shared = SharedChecks()
_states: dict[str, tuple[Any, ...]] = {}
#: Each node's state files, rendered once when the worker starts (its shard never changes).
_files: dict[str, dict[str, str]] = {}
_verdicts: dict[tuple[str, str, bool | None], dict[str, Any]] = {}


def _start(count: int, seed: int, shard: int, owner: Sequence[int]) -> None:
    """The worker's initializer: build its shard of the fleet (``owner``: each node's shard,
    ``shard_owners``)."""
    global _fleet
    with contextlib.suppress(OSError):  # not allowed here: run at the hub's priority
        os.nice(WORKER_NICE)
    threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True).start()
    fleet = DemoFleet(count, seed)
    fleet.build(shard, owner=owner)
    _fleet = fleet
    for name, sim in fleet.nodes.items():  # built once, not in the first fit
        _bases[name] = ScoreBasis.of(sim.agent_summary(SummaryCache()))
        files = _files[name] = render_state_files(sim.engine)
        _states[name] = _free_state(sim, files)
    # The shard lives as long as the worker: out of the collector's sight, a collection
    # walks only what a question allocated (a fit's collections walked the whole shard, and
    # an upgrade question's cost 7% of its CPU at 2,500 nodes).
    gc.freeze()


def _exit_with(hub: int) -> None:
    """Exit once the hub is gone: a hub killed outright (SIGKILL, the OOM killer) cannot shut
    its pools down, and a worker waiting for questions would stay with its shard's memory."""
    while os.getppid() == hub:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(0)


def _shard() -> DemoFleet:
    assert _fleet is not None, "the worker was started without its shard"
    return _fleet


def _basis_of(node: str, agent: str | None) -> ScoreBasis | None:
    return _bases.get(node)


def _free_state(sim: SimulatedNode, files: Mapping[str, str]) -> tuple[Any, ...]:
    """What a dry run of a new pod depends on besides the pod: the machine, the kubelet
    configuration and release, and what its CPU and memory managers have free (the shared
    pool, and each NUMA node's memory table, from the state files its engine writes). The
    other pods matter only by their names (a conflict), which ``_fit_rows`` checks."""
    engine = sim.engine
    cpu = _data_of(files.get(CPU_FILE_NAME))
    memory = _data_of(files.get(MEMORY_FILE_NAME))
    return (
        id(engine.topology),
        sim.config_text,
        sim.release,
        cpu.get("defaultCpuSet"),
        json.dumps(memory.get("machineState"), sort_keys=True),
    )


def _data_of(text: str | bytes | None) -> dict[str, Any]:
    doc = json.loads(text) if text else {}
    return json.loads(doc["data"]) if isinstance(doc.get("data"), str) else doc


def _fit_entries(fleet: DemoFleet, manifest: str, pod: Pod, strategy: str) -> list[Entry]:
    """Every node's fit, scored, as entries (``app.services.fleet.ranked``). A single-pod
    manifest is dry-run once per free state (``_free_state``) and the others in that state
    get that node's row under their own name (and a batch id of their own) and with their own
    score; a node with a pod of the same name or uid is dry-run itself.
    ``tests/fleet/test_fit_shared.py`` compares both ways over the demo fleet."""
    nodes = fleet.list()
    if not nodes or not _single_pod(manifest, nodes[0]):
        return [
            entry(scored(fit_result(name, doc), pod, strategy, _basis_of))
            for name, doc in fleet.dry_run_all(manifest)
        ]
    first: dict[tuple[Any, ...], SimulatedNode] = {}
    asked: list[SimulatedNode] = []
    for sim in nodes:
        state = _states[sim.name]
        if sim.engine.find_pod(pod.key) is not None or pod.uid in sim.engine.pods:
            asked.append(sim)  # the answer names the conflict
        elif state not in first:
            first[state] = sim
            asked.append(sim)
    rows = {name: fit_result(name, doc) for name, doc in fleet.dry_run_all(manifest, asked)}
    # A row per (dry-run node, score), encoded once and renamed for each node sharing it.
    shared: dict[tuple[str, int | None], Entry] = {}
    out = []
    for sim in nodes:
        row = rows.get(sim.name)
        if row is not None:
            out.append(entry(scored(row, pod, strategy, _basis_of)))
            continue
        twin = first[_states[sim.name]]
        row = rows[twin.name]
        score = _score(sim.name, pod, strategy) if row["admitted"] else None
        found = shared.get((twin.name, score))
        if found is None:
            found = shared[(twin.name, score)] = entry(_with_score(row, score))
        out.append(_renamed(found, twin.name, sim.name, row.get("batch")))
    return out


def _score(name: str, pod: Pod, strategy: str) -> int:
    basis = _bases.get(name)
    return node_score(strategy, pod, basis) if basis is not None else 0


def _with_score(row: dict[str, Any], score: int | None) -> dict[str, Any]:
    """An admitted row with ``score`` and its placement's flags (as ``score.scored``)."""
    return row if score is None else {**row, "score": score, "flags": placement_flags(row)}


def _renamed(found: Entry, old: str, new: str, batch: Any) -> Entry:
    """``found`` (node ``old``'s row) as node ``new``'s: its name replaced wherever the row
    says it (the node, its pods' pages), a fresh batch id."""
    (group, score, flags, _, agent), bits, body = found
    body = body.replace(old.encode(), new.encode())
    if isinstance(batch, str):
        body = body.replace(batch.encode(), str(uuid.uuid4()).encode())
    return (group, score, flags, new, agent), bits, body


def _single_pod(manifest: str, sim: SimulatedNode) -> bool:
    try:
        return len(parse_manifests(manifest, sim.engine.config)) == 1
    except NodeServiceError:  # every node answers the error: nothing to share
        return False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cycle collection during one question: a fit allocates some 100,000 objects, nearly
    all freed by reference counting, and collections meanwhile cost a tenth of its CPU."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _fit(manifest: str, pod: Pod, strategy: str, budget: float) -> tuple[list[Entry], float]:
    """The shard's fit entries best first (and the CPU seconds they took)."""
    started = time.process_time()
    fleet = _shard()
    try:
        with _collector_paused(), deadline.within(budget, "the fleet fit"):
            entries = _fit_entries(fleet, manifest, pod, strategy)
    except deadline.DeadlineExceededError as exc:
        why = f"not checked: {exc.message}"
        entries = [entry(fit_error(n.name, why, asked=False)) for n in fleet.list()]
    # The cycles the fit left (the collector was paused) go before the heap is trimmed, so
    # their pages are given back too: 6 MiB less RSS per worker after twelve fits at 2,000
    # nodes, for some 6 ms of CPU per fit (the shard is frozen: only the fit's objects are
    # walked).
    gc.collect()
    release_free_heap()
    return ranked(entries), time.process_time() - started


def _upgrade(release: str, gate: bool | None, names: Sequence[str]) -> tuple[list[Any], float]:
    """The upgrade rows of ``names`` (nodes of this shard), and the CPU seconds they took;
    an input the check refuses (a release or gate) is ``("error", message, field)``."""
    started = time.process_time()
    rows: list[Any] = []
    for name in names:
        try:
            verdict = _verdict(name, release, gate)
        except UpgradeInputError as exc:  # the same for every node: the question is wrong
            return [("error", exc.message, exc.field)], 0.0
        rows.append({**upgrade_result(name, verdict), "agent": None})
    return rows, time.process_time() - started


def _verdict(name: str, release: str, gate: bool | None) -> dict[str, Any]:
    """A node's upgrade verdict (``SimulatedNode.upgrade``'s), shared with the nodes of the
    shard that have the same inputs; kept per node."""
    key = (name, release, gate)
    verdict = _verdicts.get(key)
    if verdict is None:
        files = _shard().nodes[name].node_files(_files.get(name))
        verdict = _verdicts[key] = _shared.check(files, release, gate)
    return verdict


def _ping() -> int:
    return len(_shard().nodes)


# -- in the hub ---------------------------------------------------------------------------------


def shard_owners(count: int, seed: int, shards: int) -> list[int]:
    """Each demo node's shard. A fit dry-runs one node per free state (``_fit_entries``), and
    nodes share a state only with nodes of the same machine, configuration and release: such
    nodes go to one shard, so that no two workers dry-run the same state (at 5,000 nodes and
    2 shards, 1,736 dry runs instead of 2,258 by index). Groups are dealt largest first to the
    shard with the fewest nodes so far (the seed's draws, replayed: ``plan_node``)."""
    rng = random.Random(seed)
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i in range(count):
        plan = plan_node(rng, i)
        groups.setdefault((plan.preset, plan.config_text, plan.release), []).append(i)
    owner = [0] * count
    load = [0] * shards
    for members in sorted(groups.values(), key=lambda m: (-len(m), m[0])):
        shard = min(range(shards), key=lambda k: (load[k], k))
        load[shard] += len(members)
        for i in members:
            owner[i] = shard
    return owner


def worker_count() -> int:
    """One worker per CPU this process may run on (at most ``MAX_WORKERS``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


class FleetWorkers:
    """The worker processes of one demo fleet of ``count`` nodes (see the module docstring)."""

    def __init__(self, count: int, seed: int, shards: int | None = None) -> None:
        self.count = count
        self.seed = seed
        self.shards = max(1, min(shards or worker_count(), max(count, 1)))
        self._pools: list[ProcessPoolExecutor] = []
        self._built: list[Future[int]] = []
        self._fits: OrderedDict[tuple[str, str], list[Entry]] = OrderedDict()
        self._fit_bytes: dict[tuple[str, str], int] = {}
        self._owner: list[int] | None = None
        #: CPU seconds the workers spent on the last fit (figures for the benches).
        self.last_fit_cpu = 0.0

    def start(self) -> None:
        if self._pools or not self.count:
            return
        context = multiprocessing.get_context("spawn")
        self._pools = [
            ProcessPoolExecutor(
                1,
                mp_context=context,
                initializer=_start,
                initargs=(self.count, self.seed, k, self._owners()),
            )
            for k in range(self.shards)
        ]
        # Start building now, not at the first question.
        self._built = [pool.submit(_ping) for pool in self._pools]

    def problem(self) -> str | None:
        """Why the workers cannot answer yet (``None``: every shard is built)."""
        done = [f for f in self._built if f.done()]
        for f in done:
            if f.exception() is not None:
                return f"fleet workers: a worker failed: {f.exception()!r}"
        if not self._built or len(done) < len(self._built):
            return f"fleet workers: {len(done)} of {self.shards} shards built"
        return None

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=False, cancel_futures=True)
        self._pools = []
        self._built = []

    def names(self) -> list[str]:
        """Every node the workers answer for, in seed order."""
        return [node_name(i) for i in range(self.count)]

    def shard_names(self, shard: int) -> list[str]:
        owner = self._owners()
        return [node_name(i) for i in range(self.count) if owner[i] == shard]

    def _owners(self) -> list[int]:
        if self._owner is None:
            self._owner = shard_owners(self.count, self.seed, self.shards)
        return self._owner

    async def fit(self, manifest: str, pod: Pod, strategy: str, budget: float) -> list[Entry]:
        """Every demo node's fit, scored, as entries best first (the workers' bytes, merged)."""
        key = (manifest, strategy)
        cached = self._fits.get(key)
        if cached is not None:
            self._fits.move_to_end(key)
            return cached
        self.start()
        loop = asyncio.get_running_loop()
        try:
            answers = await asyncio.gather(
                *(
                    loop.run_in_executor(p, _fit, manifest, pod, strategy, budget)
                    for p in self._pools
                )
            )
        except BrokenExecutor as exc:  # a worker died (killed, out of memory): start afresh
            self.close()
            self.start()
            why = f"not checked: a fleet worker stopped ({exc}); it is being restarted"
            return ranked([entry(fit_error(n, why, asked=False)) for n in self.names()])
        entries = merged(shard for shard, _ in answers)
        self.last_fit_cpu = sum(cpu for _, cpu in answers)
        del answers
        await asyncio.to_thread(release_free_heap)  # the last fit's garbage, off the loop
        if all(e[1] & CHECKED for e in entries):  # a fit cut by the budget is not kept
            self._keep(key, entries)
        return entries

    def _keep(self, key: tuple[str, str], entries: list[Entry]) -> None:
        """Keep a fit, the oldest dropped past ``FIT_CACHE`` fits or ``FIT_CACHE_BYTES``."""
        self._fits[key] = entries
        self._fit_bytes[key] = sum(len(e[2]) for e in entries)
        while len(self._fits) > FIT_CACHE or sum(self._fit_bytes.values()) > FIT_CACHE_BYTES:
            old, _ = self._fits.popitem(last=False)
            del self._fit_bytes[old]

    def upgrade(self, release: str, gate: bool | None) -> list[Future[tuple[list[Any], float]]]:
        """One future per chunk of ``UPGRADE_CHUNK`` nodes of a shard (each shard's worker
        answers its chunks in order, the shards side by side)."""
        self.start()
        try:
            return self._upgrade_chunks(release, gate)
        except BrokenExecutor:  # a worker died since the last question: start afresh
            self.close()
            self.start()
            return self._upgrade_chunks(release, gate)

    def _upgrade_chunks(
        self, release: str, gate: bool | None
    ) -> list[Future[tuple[list[Any], float]]]:
        return [
            pool.submit(_upgrade, release, gate, names[i : i + UPGRADE_CHUNK])
            for pool, names in zip(
                self._pools, (self.shard_names(k) for k in range(self.shards)), strict=True
            )
            for i in range(0, len(names), UPGRADE_CHUNK)
        ]
