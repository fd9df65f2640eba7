"""services/nodes/service.py and node_views: create/admit/reject/dry-run/remove, the admission log,
state files and restarts, demo nodes, the CPU map's owners and the metrics samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from app.domain.cpuset import CPUSet
from app.services.demo import (
    DATABASE_POD,
    DEMO_NODES,
    EMPTY_SHARED_POOL_POD,
    POD_SCOPE_CONFIG,
    bubble_pod,
    classic_pod,
    create_demo_nodes,
)
from app.services.node_views import PALETTE_SIZE, palette_index, pod_tag
from app.services.nodes.errors import (
    NodeExistsError,
    NodeInputError,
    NodeUnavailableError,
    PodConflictError,
    UnknownNodeError,
    UnknownPodError,
)
from app.services.nodes.service import NodeService
from tests.helpers import POD_SCOPE, SMALL, migrated_engine


@pytest.fixture
def small(service: NodeService) -> NodeService:
    service.create("small", SMALL, POD_SCOPE)
    return service


def pod_cpus(service: NodeService, node: str, key: str) -> dict[str, str]:
    snap = service.reads.snapshot(node)
    ns, name = key.split("/")
    p = snap.pod(ns, name)
    assert p is not None
    return {c.name: str(c.cpuset) for c in p.containers}


# -- create / delete -------------------------------------------------------------------------


def test_create_gives_an_empty_node_with_its_reserved_cpus(small: NodeService) -> None:
    summary = small.reads.summary("small")
    assert summary.simulated and summary.source == "simulation"
    assert (summary.cpus.total, summary.cpus.reserved, summary.cpus.node_shared) == (12, 1, 11)
    assert summary.pods == summary.rejected == 0
    assert summary.topology.kind == "preset" and summary.topology.url == f"/topologies/{SMALL}"
    assert small.registry.simulated_names() == ["small"]
    assert small.registry.definition("small").kubelet_config == POD_SCOPE


def test_create_accepts_a_topology_spec(service: NodeService) -> None:
    service.create("spec", "sockets=1,cores_per_numa=4,threads_per_core=2", POD_SCOPE)
    summary = service.reads.summary("spec")
    assert summary.topology.kind == "spec" and summary.topology.url is None
    assert summary.cpus.total == 8


@pytest.mark.parametrize(
    ("name", "topology", "config", "release", "field"),
    [
        pytest.param("Bad_Name", SMALL, POD_SCOPE, "1.37", "name", id="name-uppercase"),
        pytest.param("", SMALL, POD_SCOPE, "1.37", "name", id="name-empty"),
        pytest.param("x.json", SMALL, POD_SCOPE, "1.37", "name", id="name-json-suffix"),
        pytest.param("n", "no-such-preset", POD_SCOPE, "1.37", "topology", id="unknown-preset"),
        pytest.param("n", "sockets=x,cores_per_numa=2", POD_SCOPE, "1.37", "topology", id="bad-spec"),
        pytest.param("n", SMALL, "cpuManagerPolicy: fancy", "1.37", "cpuManagerPolicy", id="policy"),
        pytest.param("n", SMALL, "cpuManagerPolicy: [", "1.37", "KubeletConfiguration", id="yaml"),
        pytest.param("n", SMALL, POD_SCOPE, "1.99", "release", id="release"),
        pytest.param(
            "n", SMALL, 'cpuManagerPolicy: static\nreservedSystemCPUs: "0,99"', "1.37",
            "reservedSystemCPUs", id="reserved-off-machine",
        ),
    ],
)  # fmt: skip
def test_create_rejects_bad_input_naming_the_field(
    service: NodeService, name: str, topology: str, config: str, release: str, field: str
) -> None:
    with pytest.raises(NodeInputError) as err:
        service.create(name, topology, config, release)
    assert err.value.field == field
    assert field in err.value.message or field == "KubeletConfiguration"
    assert service.registry.simulated_names() == []


def test_create_twice_is_a_conflict(small: NodeService) -> None:
    with pytest.raises(NodeExistsError, match="already exists"):
        small.create("small", SMALL, POD_SCOPE)


def test_delete_removes_definition_log_and_state_files(
    small: NodeService, engine: Engine, state_dir: Path
) -> None:
    small.admit("small", classic_pod("a", "default", "2", "1Gi"))
    assert (state_dir / "small" / "cpu_manager_state").is_file()
    small.delete("small")
    assert small.registry.simulated_names() == []
    assert not (state_dir / "small").exists()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM nodes")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM admissions")).scalar() == 0
    with pytest.raises(UnknownNodeError, match="'small' not found"):
        small.delete("small")


def test_unknown_node_lists_the_known_ones(small: NodeService) -> None:
    with pytest.raises(UnknownNodeError) as err:
        small.reads.node_view("nope")
    assert err.value.known == ("small",)
    assert "simulated nodes: small" in err.value.message


# -- admission -----------------------------------------------------------------------------


def test_admit_keeps_the_pod_logs_it_and_writes_state_files(
    small: NodeService, state_dir: Path
) -> None:
    batch = small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    assert batch.all_admitted and not batch.dry_run
    (entry,) = small.reads.admissions("small", batch=batch.batch)
    assert (entry.action, entry.namespace, entry.name, entry.admitted) == (
        "admit", "prod", "db", True,
    )  # fmt: skip
    assert entry.pod_url == "/nodes/small/pods/prod/db"
    assert small.reads.summary("small").pods == 1
    body = batch.to_dict()
    assert body["admitted"] is True and "reason" not in body
    assert body["results"][0]["url"] == "/nodes/small/pods/prod/db"
    files = sorted(p.name for p in (state_dir / "small").iterdir())
    assert files == ["cpu_manager_state", "memory_manager_state", "pods.json"]
    pods = json.loads((state_dir / "small" / "pods.json").read_text())
    assert [p["manifest"]["metadata"]["name"] for p in pods["pods"]] == ["db"]


def test_a_rejected_pod_is_a_verdict_not_an_error(small: NodeService) -> None:
    before = small.reads.snapshot("small")
    batch = small.admit("small", EMPTY_SHARED_POOL_POD)
    (result,) = batch.results
    assert not result.admitted
    assert result.reason == "TopologyAffinityError"
    assert result.message == (
        "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"
    )
    body = batch.to_dict()
    assert (body["admitted"], body["reason"]) == (False, "TopologyAffinityError")
    assert body["summary"] == {"admitted": 0, "rejected": 1}
    after = small.reads.snapshot("small")
    assert after.pods == () and after.default_cpuset == before.default_cpuset
    assert small.reads.summary("small").rejected == 1
    (entry,) = small.reads.admissions("small")
    assert (entry.admitted, entry.reason, entry.pod_url) == (False, "TopologyAffinityError", None)


def test_dry_run_judges_pods_in_order_and_keeps_nothing(small: NodeService) -> None:
    # Each 6-CPU bubble fits NUMA node 1 alone; the second cannot fit anywhere after the first.
    six_a = bubble_pod("six-a", "default", 6, {"main": 4})
    six_b = bubble_pod("six-b", "default", 6, {"main": 4})
    one = small.admit("small", six_b, dry_run=True)
    assert one.all_admitted and one.dry_run
    both = small.admit("small", six_a + "---\n" + six_b, dry_run=True)
    assert [r.admitted for r in both.results] == [True, False]
    assert both.results[1].reason == "TopologyAffinityError"
    assert small.reads.snapshot("small").pods == ()
    assert small.reads.summary("small").rejected == 0  # dry runs do not count
    assert [e.action for e in small.reads.admissions("small", batch=both.batch)] == ["dry-run"] * 2


def test_a_multi_document_manifest_is_admitted_in_order(small: NodeService) -> None:
    text_ = classic_pod("first", "default", "2", "1Gi") + "---\n" + DATABASE_POD
    batch = small.admit("small", text_)
    assert [r.admitted for r in batch.results] == [True, False]  # budget 8 > 6 CPUs per NUMA
    assert [p.name for p in small.reads.snapshot("small").pods] == ["first"]


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        pytest.param("", "manifest", id="empty"),
        pytest.param("kind: Pod\nmetadata: {name: x}\nspec: {containers: [}", "", id="yaml"),
        pytest.param(
            "metadata: {name: x}\nspec: {containers: [{name: c, resources: {limits: {cpu: lots}}}]}",
            "spec.containers[0].resources.limits.cpu",
            id="quantity",
        ),
        pytest.param("metadata: {name: x}\nspec: {}", "spec.containers", id="no-containers"),
    ],
)
def test_bad_manifests_name_the_field(small: NodeService, manifest: str, field: str) -> None:
    with pytest.raises(NodeInputError) as err:
        small.admit("small", manifest)
    if field:
        assert err.value.field == field
        assert field in err.value.message
    assert small.reads.admissions("small") == []


def test_a_pod_already_on_the_node_is_a_conflict(small: NodeService) -> None:
    pod = classic_pod("a", "default", "1", "1Gi")
    small.admit("small", pod)
    with pytest.raises(PodConflictError, match="already on node small"):
        small.admit("small", pod)
    with pytest.raises(PodConflictError):
        small.admit(
            "small",
            classic_pod("b", "x", "1", "1Gi") * 1 + "---\n" + classic_pod("b", "x", "1", "1Gi"),
        )


def test_remove_gives_everything_back_and_is_logged(small: NodeService) -> None:
    empty = small.reads.snapshot("small")
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}))
    assert small.reads.snapshot("small").default_cpuset != empty.default_cpuset
    entry = small.remove_pod("small", "prod", "db")
    assert (entry.action, entry.name) == ("remove", "db")
    after = small.reads.snapshot("small")
    assert after.pods == () and after.default_cpuset == empty.default_cpuset
    assert after.memory == empty.memory
    with pytest.raises(UnknownPodError, match="pod db in namespace prod not found"):
        small.remove_pod("small", "prod", "db")


# -- restarts ----------------------------------------------------------------------------------


def _state(service: NodeService, node: str) -> tuple[object, ...]:
    snap = service.reads.snapshot(node)
    return (
        str(snap.default_cpuset),
        [(p.uid, p.admitted_at, p.pod_cpuset, [(c.name, str(c.cpuset)) for c in p.containers])
         for p in snap.pods],
        snap.memory,
    )  # fmt: skip


def _load_some(service: NodeService) -> None:
    service.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    service.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    service.admit("small", classic_pod("gone", "batch", "1", "1Gi"))
    service.admit("small", EMPTY_SHARED_POOL_POD)
    service.remove_pod("small", "batch", "gone")


def test_a_new_service_restores_nodes_from_the_database_and_state_files(
    small: NodeService, engine: Engine, state_dir: Path
) -> None:
    _load_some(small)
    again = NodeService(engine, state_dir=state_dir)
    again.start(seed=create_demo_nodes)  # nodes exist: no demo nodes
    assert again.registry.simulated_names() == ["small"]
    assert _state(again, "small") == _state(small, "small")
    summary = again.reads.summary("small")
    assert (summary.pods, summary.rejected, summary.load_error) == (2, 1, None)
    assert [e.action for e in again.reads.admissions("small")] == [
        "remove", "admit", "admit", "admit", "admit",
    ]  # fmt: skip


def test_without_state_files_the_log_is_replayed(
    small: NodeService, engine: Engine, state_dir: Path
) -> None:
    _load_some(small)
    for f in (state_dir / "small").iterdir():
        f.unlink()
    again = NodeService(engine, state_dir=state_dir)
    again.start()
    assert _state(again, "small") == _state(small, "small")
    error = again.reads.summary("small").load_error  # the difference is reported
    assert error == "there were no state files; the node was rebuilt from its log"
    assert (state_dir / "small" / "cpu_manager_state").is_file()  # written again


def test_unreadable_state_files_are_reported_and_never_replaced(
    small: NodeService, engine: Engine, state_dir: Path
) -> None:
    _load_some(small)
    (state_dir / "small" / "cpu_manager_state").write_text("{not json")
    again = NodeService(engine, state_dir=state_dir)
    again.start()
    error = again.reads.summary("small").load_error
    assert error is not None and "could not be restored" in error
    with pytest.raises(NodeUnavailableError, match="changes are refused"):
        again.admit("small", classic_pod("more", "batch", "1", "1Gi"))
    # Nothing rebuilt from the log, nothing moved: the file is as it was.
    assert (state_dir / "small" / "cpu_manager_state").read_text() == "{not json"


def test_demo_nodes_are_created_once(engine: Engine, state_dir: Path) -> None:
    s = NodeService(engine, state_dir=state_dir)
    s.start(seed=create_demo_nodes)
    assert s.registry.simulated_names() == sorted(d.name for d in DEMO_NODES)
    pod_scope = s.reads.summary("demo-pod-scope")
    assert (pod_scope.pods, pod_scope.rejected) == (4, 1)
    assert pod_scope.policies.topology_manager_scope == "pod"
    assert pod_scope.policies.pod_level_resource_managers
    db = pod_cpus(s, "demo-pod-scope", "databases/tightly-coupled-database")
    assert CPUSet.parse(db["database"]).size() == 6
    assert db["metrics-exporter"] == db["backup-agent"]  # the pod shared pool
    mixed = s.reads.snapshot("demo-container-scope").pod("default", "container-scope-mixed")
    assert mixed is not None
    assert [(c.name, c.isolation) for c in mixed.containers] == [
        ("infrastructure-sidecar", "container"), ("worker-1", "host"), ("worker-2", "host"),
    ]  # fmt: skip
    assert s.reads.summary("demo-512").pods >= 10
    again = NodeService(engine, state_dir=state_dir)
    again.start(seed=create_demo_nodes)
    assert again.registry.simulated_names() == s.registry.simulated_names()
    assert again.reads.summary("demo-pod-scope").pods == 4


# -- views -------------------------------------------------------------------------------------


def test_the_cpu_map_owners_follow_the_state(small: NodeService) -> None:
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    small.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    view = small.reads.node_view("small")
    cells = view.map.cells
    snap = small.reads.snapshot("small")
    db = snap.pod("prod", "db")
    solo = snap.pod("batch", "solo")
    assert db is not None and solo is not None
    main = next(c for c in db.containers if c.name == "main")
    for cpu in main.cpuset:
        assert (cells[cpu].pool, cells[cpu].owner, cells[cpu].tag) == (
            "exclusive", "prod/db/main", "A1",
        )  # fmt: skip
        assert "isolation container" in cells[cpu].title
        assert cells[cpu].url == "/nodes/small/pods/prod/db#container-main"
    for cpu in db.shared_pool():
        assert (cells[cpu].pool, cells[cpu].owner, cells[cpu].tag) == ("pod-shared", "prod/db", "A")
    for cpu in solo.exclusive_cpus():
        assert (cells[cpu].pool, cells[cpu].tag) == ("exclusive", "B1")
    assert (cells[0].pool, cells[0].tag) == ("reserved", "R")
    assert len(cells) == 12
    owners = {e.owner for e in view.map.legend}
    assert {"reserved", "node-shared", "prod/db", "prod/db/main", "batch/solo/main"} <= owners
    row = next(r for r in view.numa_pools if r.numa_node == 1)
    assert row.counts.total == sum(
        (row.counts.reserved, row.counts.node_shared, row.counts.pod_shared, row.counts.exclusive)
    )
    assert view.pools["podShared"]["prod/db"]["cpus"] == str(db.shared_pool())


def test_pod_view_breaks_the_budget_down(small: NodeService) -> None:
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    view = small.reads.pod_view("small", "prod", "db")
    parts = [(p.part, p.containers, len(p.cpus.cpu_ids)) for p in view.parts]
    assert parts == [("exclusive", ["main"], 2), ("pod-shared", ["side"], 2)]
    assert view.pod.budget is not None and view.pod.budget.cpu == "4"
    assert view.pod.budget.memory == {"memory": 8 * 1024**3}
    assert view.map.focus == "prod/db"
    assert set(view.map.memory) == set(view.pod.numa_nodes)
    assert view.podresources["podResources"]["name"] == "db"
    assert [e.action for e in view.admissions] == ["admit"]
    with pytest.raises(UnknownPodError):
        small.reads.pod_view("small", "prod", "nope")


def test_memory_by_pod_adds_up_to_the_reserved_memory(small: NodeService) -> None:
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    small.admit("small", classic_pod("solo", "batch", "2", "2Gi"))
    for mem in small.reads.node_view("small").map.memory.values():
        assert mem.accounted
        for r in mem.resources:
            assert sum(u.bytes for u in r.by_pod) == r.reserved
            assert r.allocatable == r.total - r.system_reserved


def test_podresources_translations(small: NodeService) -> None:
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    listed = small.reads.podresources_list("small")
    assert [p["name"] for p in listed["podResources"]] == ["db"]
    got = small.reads.podresources_get("small", "prod", "db")
    assert got["podResources"] == listed["podResources"][0]
    assert "cpuIds" in small.reads.allocatable("small")
    with pytest.raises(UnknownPodError, match=r"^pod x in namespace prod not found$"):
        small.reads.podresources_get("small", "prod", "x")


def test_metric_samples_cover_every_cpu_once(small: NodeService) -> None:
    small.admit("small", bubble_pod("db", "prod", 4, {"main": 2}, ("side",)))
    samples = list(small.reads.metric_samples())
    cpus = [(lb, v) for name, lb, v in samples if name == "cpus"]
    assert sum(v for _, v in cpus) == 12
    assert {lb["pool"] for lb, _ in cpus} == {"reserved", "node_shared", "pod_shared", "exclusive"}
    assert all(lb["node"] == "small" for _, lb, _ in samples)
    budget = {lb["part"]: v for name, lb, v in samples if name == "pod_budget_cpus"}
    assert budget == {"exclusive": 2.0, "pod_shared": 2.0}
    excl = [v for name, lb, v in samples if name == "container_exclusive_cpus"]
    assert excl == [2.0]
    mem = {
        (lb["numa_node"], lb["resource"], lb["state"])
        for n, lb, _ in samples
        if n == "numa_memory_bytes"
    }
    assert ("0", "memory", "free") in mem


@pytest.mark.parametrize(
    ("index", "tag"),
    [(0, "A"), (1, "B"), (25, "Z"), (26, "AA"), (27, "AB"), (701, "ZZ"), (702, "AAA")],
    ids=lambda v: str(v),
)
def test_pod_tags(index: int, tag: str) -> None:
    assert pod_tag(index) == tag


def test_palette_is_stable_and_avoids_taken_slots() -> None:
    key = "prod/db"
    first = palette_index(key)
    assert palette_index(key) == first
    assert palette_index(key, {first}) == (first + 1) % PALETTE_SIZE
    assert palette_index(key, set(range(PALETTE_SIZE))) == first


# -- property: any admit/remove sequence keeps the map a partition -------------------------------

_POD_SHAPES = st.one_of(
    st.builds(lambda n: ("bubble", n), st.integers(2, 6)),
    st.builds(lambda n: ("classic", n), st.integers(1, 4)),
    st.just(("burstable", 0)),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.tuples(st.booleans(), _POD_SHAPES), min_size=1, max_size=8))
def test_owners_partition_the_node_after_any_sequence(
    steps: list[tuple[bool, tuple[str, int]]],
) -> None:
    with migrated_engine("sqlite://") as engine:
        service = NodeService(engine)
        service.create("p", SMALL, POD_SCOPE)
        empty = service.reads.snapshot("p").default_cpuset
        for i, (remove_first, (shape, n)) in enumerate(steps):
            pods = service.reads.snapshot("p").pods
            if remove_first and pods:
                service.remove_pod("p", pods[0].namespace, pods[0].name)
            if shape == "bubble":
                manifest = bubble_pod(f"p{i}", "ns", n, {"main": n - 1})
            elif shape == "classic":
                manifest = classic_pod(f"p{i}", "ns", str(n), "1Gi")
            else:
                manifest = (
                    f"metadata: {{name: p{i}, namespace: ns}}\n"
                    "spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}"
                )
            service.admit("p", manifest)
            view = service.reads.node_view("p")
            snap = service.reads.snapshot("p")
            by_pool: dict[str, set[int]] = {}
            for cpu, cell in view.map.cells.items():
                by_pool.setdefault(cell.pool, set()).add(cpu)
            assert set(view.map.cells) == set(snap.topology.all_cpus)
            exclusive = set(snap.pods and CPUSet.from_mask(
                sum(p.exclusive_cpus().mask for p in snap.pods)  # disjoint: the sum is the union
            ))  # fmt: skip
            assert by_pool.get("exclusive", set()) == exclusive
            counts = view.summary.cpus
            assert counts.total == (
                counts.reserved + counts.node_shared + counts.pod_shared + counts.exclusive
            )
        for p in service.reads.snapshot("p").pods:
            service.remove_pod("p", p.namespace, p.name)
        assert service.reads.snapshot("p").default_cpuset == empty


def test_demo_pod_scope_config_is_the_documented_setup() -> None:
    assert "topologyManagerScope: pod" in POD_SCOPE_CONFIG
    assert "full-pcpus-only" in POD_SCOPE_CONFIG


def test_the_migration_creates_exactly_the_tables_of_the_models(engine: Engine) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    import app.adapters.db.tables  # noqa: F401  (registers the tables on the metadata)
    from app.adapters.db.models import metadata

    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), metadata
        )
    assert diff == []
    with engine.connect() as conn:
        tables = {
            r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))
        }
    assert {"nodes", "admissions"} <= tables
