"""services/observe/observer.py end to end, without a kubelet: a simulated node's state files in a tmp
"kubelet root", its PodResources served on a tmp socket, a fake sysfs tree of its topology; the
observed node must be the simulated one. Plus the observed node in the app (pages, JSON, API,
409 on changes, /readyz, metrics) and the read-only guarantee."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.adapters import statefiles
from app.adapters.grpc.server import PodResourcesServer
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import parse_pod_manifests
from app.adapters.podresources_cache import list_response_json
from app.domain.checkpoint import CPUCheckpointState, write_cpu_checkpoint
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfigError
from app.domain.node.model import Node
from app.domain.node.state_files import cpu_checkpoint_state, render_state_files
from app.domain.observed import UID_ONLY_NAMESPACE
from app.domain.presets import get_preset
from app.domain.snapshot import NodeSnapshot
from app.services import demo
from app.services.observe.observation import observe_node
from app.services.observe.observer import NodeObserver, ObservedNodeUnavailableError
from app.settings import Settings
from app.web.app import create_app
from tests.fixtures.sysfs import fake_sysfs_from_topology
from tests.helpers import act_as_browser, make_settings

YAML = {"Content-Type": "application/yaml"}

NODE = "worker-1"
GHOST = "0b5e7c1d-dead-4bee-8000-00000000beef"
CPU_FILE = "cpu_manager_state"
MEMORY_FILE = "memory_manager_state"
PODS = (demo.DATABASE_POD, demo.ML_POD, demo.CLASSIC_POD, demo.BURSTABLE_POD)


@dataclass
class Host:
    """A fake machine: kubelet root, sysfs, a PodResources socket serving ``snapshot``."""

    node: Node
    snapshot: NodeSnapshot
    root: Path
    sysfs: Path
    socket: Path
    base: Path

    def settings(self, **kw: Any) -> Settings:
        values: dict[str, Any] = {
            "kubelet_root": self.root,
            "podresources_socket": str(self.socket),
            "sysfs_root": self.sysfs,
            "node_name": NODE,
            "database_url": f"sqlite:///{self.base / 'db' / 'n.db'}",
        }
        return make_settings(self.base, **{**values, **kw})


def _engine_node() -> Node:
    config = parse_kubelet_config_text(demo.POD_SCOPE_CONFIG, "1.37")
    node = Node("sim", get_preset("server-2s-4numa-128t"), config, clock=lambda: 100.0)
    for text in PODS:
        for pod in parse_pod_manifests(text):
            assert node.admit(pod).admitted
    return node


def _files_with_ghost(node: Node) -> dict[str, str]:
    files = render_state_files(node)
    cpu = cpu_checkpoint_state(node)
    ghost = CPUSet.parse("30-31")
    files[CPU_FILE] = write_cpu_checkpoint(
        CPUCheckpointState(
            cpu.policy_name,
            cpu.default_cpu_set - ghost,
            {**cpu.entries, GHOST: {"old": ghost}},
            cpu.pod_entries,
        ),
        "V4",
    )
    return files


@pytest.fixture(scope="module")
def engine_node() -> Node:
    return _engine_node()


@pytest.fixture
def host(engine_node: Node, tmp_path: Path) -> Iterator[Host]:
    base = Path(tempfile.mkdtemp(prefix="h11-", dir="/tmp"))  # short: sun_path holds 108 bytes
    try:
        root = base / "kubelet"
        root.mkdir()
        statefiles.write_files(root, _files_with_ghost(engine_node))
        (root / "config.yaml").write_text(demo.POD_SCOPE_CONFIG)
        snap = engine_node.snapshot()
        for p in snap.pods:
            (root / "pods" / p.uid).mkdir(parents=True)
        sysfs = fake_sysfs_from_topology(engine_node.topology).write(tmp_path)
        sock = base / "pr.sock"
        with PodResourcesServer(lambda: snap, str(sock)):
            yield Host(engine_node, snap, root, sysfs, sock, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def recorded(snapshot: NodeSnapshot) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in snapshot.pods:
        containers = {
            c.name: (str(c.cpuset), c.isolation, c.memory)
            for c in p.containers
            if c.cpuset or c.memory
        }
        if containers or p.pod_cpuset is not None or p.pod_memory:
            key = f"{p.namespace}/{p.name}"
            out[p.uid] = (
                key,
                None if p.pod_cpuset is None else str(p.pod_cpuset),
                p.pod_memory,
                containers,
            )
    return out


def tree_state(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every path under ``root``: mtime, mode and (files) content."""
    out: dict[str, tuple[int, int, bytes | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            st = p.lstat()
            content = p.read_bytes() if p.is_file() and not p.is_symlink() else None
            out[str(p.relative_to(root))] = (st.st_mtime_ns, st.st_mode, content)
    st = root.stat()
    out["."] = (st.st_mtime_ns, st.st_mode, None)
    return out


# -- observe_node ---------------------------------------------------------------------------


def test_observed_node_is_the_simulated_one(host: Host) -> None:
    observed = observe_node(host.settings())
    snap = observed.snapshot
    assert snap is not None and snap.simulated is False and snap.name == NODE
    want = recorded(host.snapshot)
    got = recorded(snap)
    assert {uid: v for uid, v in got.items() if uid != GHOST} == want
    assert snap.reserved_cpus == host.snapshot.reserved_cpus == CPUSet.parse("0,64")
    assert snap.default_cpuset == host.snapshot.default_cpuset - CPUSet.parse("30-31")
    assert snap.memory == host.snapshot.memory
    assert snap.config.cpu_manager_policy_options == {"full-pcpus-only": "true"}  # config.yaml
    assert observed.config_path == str(host.root / "config.yaml") and not observed.config_inferred
    assert {s.source: s.ok for s in observed.sources} == {
        "sysfs": True, "checkpoint": True, "podresources": True, "kubelet-config": True,
    }  # fmt: skip
    assert [(f.file, f.version, f.read_as) for f in observed.files] == [
        (CPU_FILE, "V4", "1.37 gate on"),
        (MEMORY_FILE, "V3", "1.37 gate on"),
    ]
    assert observed.ready
    # pools from the kubelet's own answers (PodResources arithmetic)
    assert observed.pools is not None and observed.pools.source == "podresources"
    assert observed.pools.reserved == CPUSet.parse("0,64")


def test_stale_entry_is_flagged_and_keeps_its_cpus(host: Host) -> None:
    observed = observe_node(host.settings())
    assert observed.stale_uids == {GHOST}
    assert [(s.file, s.uid, s.container, str(s.cpus)) for s in observed.stale] == [
        (CPU_FILE, GHOST, "old", "30-31")
    ]
    ghost = observed.identity(UID_ONLY_NAMESPACE, GHOST)
    assert ghost is not None and ghost.stale and ghost.live_dir is False
    for i in observed.identities:
        if i.uid and i.uid != GHOST:
            assert not i.stale and i.live_dir is True and i.name is not None


def test_observing_writes_nothing_under_the_kubelet_root(host: Host) -> None:
    before = tree_state(host.root)
    observe_node(host.settings())
    app = create_app(host.settings(observe=True))
    with TestClient(app) as client:
        for url in (
            f"/nodes/{NODE}",
            f"/nodes/{NODE}.json",
            f"/api/v1/nodes/{NODE}/podresources",
            f"/nodes/{NODE}/pods/ml/training",
            "/readyz",
            "/metrics",
        ):
            assert client.get(url).status_code == 200, url
        client.post(f"/api/v1/nodes/{NODE}/pods", headers=YAML, content=demo.CLASSIC_POD)
    assert tree_state(host.root) == before


def test_missing_socket_shows_the_checkpoint_by_uid(host: Host) -> None:
    observed = observe_node(host.settings(podresources_socket=str(host.base / "absent.sock")))
    pr = observed.source("podresources")
    assert pr is not None and not pr.ok
    assert "PodResources socket" in pr.errors[0] and "not found" in pr.errors[0]
    assert not observed.ready and observed.list_response is None
    snap = observed.snapshot
    assert snap is not None
    assert {p.namespace for p in snap.pods} == {UID_ONLY_NAMESPACE}
    placement = {
        uid: (pc, pm, {n: (cs, m) for n, (cs, _i, m) in c.items()})
        for uid, (_k, pc, pm, c) in recorded(snap).items()
        if uid != GHOST
    }
    assert placement == {
        uid: (pc, pm, {n: (cs, m) for n, (cs, _i, m) in c.items()})
        for uid, (_k, pc, pm, c) in recorded(host.snapshot).items()
    }
    # the pods dir still tells the stale entry
    assert observed.stale_uids == {GHOST}
    assert ("podresources", pr.errors[0]) in observed.errors


def test_corrupt_checkpoint_shows_the_kubelet_text(host: Host) -> None:
    path = host.root / CPU_FILE
    os.chmod(path, 0o600)
    path.write_text(path.read_text()[:100])
    observed = observe_node(host.settings())
    cp = observed.source("checkpoint")
    assert cp is not None and cp.ok  # the file was read; its content is refused
    (error,) = cp.errors
    assert error.startswith(f"{CPU_FILE}: could not restore state from checkpoint: ")
    assert f'delete the CPU manager checkpoint file "{host.root}/{CPU_FILE}"' in error
    (cpu,) = [f for f in observed.files if f.manager == "cpu"]
    assert not cpu.accepted and cpu.read_as is None
    # CPUs then come from PodResources (the consumer arithmetic); memory from its own file
    snap = observed.snapshot
    assert snap is not None
    training = snap.pod("ml", "training")
    want = host.snapshot.pod("ml", "training")
    assert training is not None and want is not None
    assert training.pod_cpuset == want.pod_cpuset
    assert training.shared_pool() == want.shared_pool()
    assert training.uid == want.uid  # joined through the memory blocks


def test_unreadable_state_file_is_a_read_error(host: Host) -> None:
    path = host.root / MEMORY_FILE
    path.unlink()
    os.mkfifo(path)  # not a regular file: refused without blocking (works as root too)
    observed = observe_node(host.settings())
    cp = observed.source("checkpoint")
    assert cp is not None and not cp.ok
    assert cp.errors == (f"{path}: is not a regular file",)
    (mem,) = [f for f in observed.files if f.manager == "memory"]
    assert mem.read_error == f"{path}: is not a regular file" and not mem.accepted
    assert observed.snapshot is not None and observed.snapshot.memory == ()


@pytest.mark.parametrize(
    ("setup", "ok", "error"),
    [
        pytest.param("explicit-missing", False, "does not exist", id="explicit-missing"),
        pytest.param("bad-yaml", False, "not valid YAML", id="bad-yaml"),
        pytest.param("none", True, None, id="no-config"),
        pytest.param("explicit", True, None, id="explicit"),
    ],
)
def test_kubelet_config_file(host: Host, setup: str, ok: bool, error: str | None) -> None:
    kw: dict[str, Any] = {}
    if setup == "explicit-missing":
        kw["kubelet_config_file"] = host.base / "nope.yaml"
    elif setup == "bad-yaml":
        (host.root / "config.yaml").write_text("cpuManagerPolicy: [static\n")
    elif setup == "none":
        (host.root / "config.yaml").unlink()
    else:
        other = host.base / "kubelet.yaml"
        other.write_text(demo.POD_SCOPE_CONFIG.replace('"0,64"', '"0,1,64,65"'))
        kw["kubelet_config_file"] = other
    observed = observe_node(host.settings(**kw))
    status = observed.source("kubelet-config")
    assert status is not None and status.ok is ok
    if error is not None:
        assert error in status.errors[0]
    assert observed.snapshot is not None
    # the policies are known either way (from the files when there is no configuration)
    assert observed.snapshot.config.cpu_manager_policy == "static"
    assert observed.config_inferred is (setup != "explicit")
    if setup == "explicit":
        assert observed.snapshot.config.reserved_system_cpus == CPUSet.parse("0-1,64-65")
        # the reserved CPUs still come from what the kubelet reports (allocatable)
        assert observed.snapshot.reserved_cpus == CPUSet.parse("0,64")


def test_gate_the_table_does_not_know_is_noted_not_fatal(host: Host) -> None:
    # The running kubelet accepted this gate; Numascope's 1.37 table does not know it.
    text = demo.POD_SCOPE_CONFIG.replace(
        "  PodLevelResourceManagers: true\n",
        "  PodLevelResourceManagers: true\n  FutureGate: true\n",
    )
    assert "FutureGate" in text
    (host.root / "config.yaml").write_text(text)
    observed = observe_node(host.settings())
    status = observed.source("kubelet-config")
    assert status is not None and status.ok
    (note,) = status.errors
    assert "unrecognized feature gate: FutureGate" in note and "running kubelet" in note
    assert observed.snapshot is not None and not observed.config_inferred
    assert observed.snapshot.config.gate("FutureGate") is True
    # A simulated node with the same configuration is refused, as that kubelet would.
    with pytest.raises(KubeletConfigError, match="unrecognized feature gate: FutureGate"):
        parse_kubelet_config_text(text, "1.37")


def test_missing_sysfs_gives_no_snapshot(host: Host) -> None:
    observed = observe_node(host.settings(sysfs_root=host.base / "no-sys"))
    assert observed.snapshot is None and not observed.ready
    status = observed.source("sysfs")
    assert status is not None and not status.ok and "is not a directory" in status.errors[0]
    # the other sources are still read
    assert observed.list_response is not None and observed.files


def test_missing_kubelet_root(host: Host) -> None:
    observed = observe_node(
        host.settings(kubelet_root=host.base / "gone", kubelet_config_file=None)
    )
    cp = observed.source("checkpoint")
    assert cp is not None and not cp.ok and "does not exist" in cp.errors[0]
    assert observed.snapshot is not None  # PodResources and sysfs still describe the node
    assert observed.snapshot.source == "podresources"


# -- NodeObserver ---------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_observer_caches_for_its_ttl_and_counts_errors(host: Host) -> None:
    clock = FakeClock()
    counted: list[str] = []
    settings = host.settings(podresources_socket=str(host.base / "absent.sock"))
    obs = NodeObserver(settings, ttl=2.0, clock=clock, on_error=counted.append)
    assert obs.name == NODE
    first = obs.current()
    assert obs.current() is first and obs.observations == 1
    clock.now = 1.9
    assert obs.current() is first
    clock.now = 2.0
    second = obs.current()
    assert second is not first and obs.observations == 2
    assert counted == ["podresources", "podresources"]
    assert obs.ready  # the state files were read; the socket is reported, not waited for
    assert not second.ready and second.serving
    obs.refresh()
    assert obs.observations == 3


def test_observer_views_and_podresources(host: Host) -> None:
    obs = NodeObserver(host.settings())
    view = obs.node_view()
    assert view.summary.simulated is False and view.summary.source == "observed"
    assert view.summary.name == NODE and view.admissions == []
    assert view.observation is not None and view.observation.ready
    rows = {r.key: r for r in view.pods}
    assert (
        rows[f"{UID_ONLY_NAMESPACE}/{GHOST}"].stale
        and rows[f"{UID_ONLY_NAMESPACE}/{GHOST}"].uid_only
    )
    assert not rows["ml/training"].stale and rows["ml/training"].uid
    assert obs.podresources_list() == list_response_json(host.snapshot)
    got = obs.podresources_get("ml", "training")["podResources"]
    assert got["name"] == "training" and got["cpuIds"]
    assert obs.allocatable()["cpuIds"]
    pod = obs.pod_view("ml", "training")
    assert pod.podresources["podResources"]["namespace"] == "ml"
    ghost = obs.pod_view(UID_ONLY_NAMESPACE, GHOST)
    assert ghost.pod.stale and ghost.podresources == {}


def test_observer_without_topology_raises_unavailable(host: Host) -> None:
    obs = NodeObserver(host.settings(sysfs_root=host.base / "no-sys"))
    summary = obs.summary()
    assert summary.simulated is False and summary.load_error is not None
    assert "sysfs" in summary.load_error
    with pytest.raises(ObservedNodeUnavailableError, match="cannot be observed"):
        obs.node_view()


# -- the app ----------------------------------------------------------------------------------


@pytest.fixture
def client(host: Host) -> Iterator[TestClient]:
    with TestClient(create_app(host.settings(observe=True))) as c:
        yield act_as_browser(c)


def test_nodes_page_lists_the_observed_node_first(client: TestClient) -> None:
    client.post(
        "/api/v1/nodes",
        json={
            "name": "sim-a",
            "topology": "topoDualSocketHT",
            "kubeletConfig": "cpuManagerPolicy: none\n",
        },
    )
    body = client.get("/api/v1/nodes").json()
    assert [(n["name"], n["simulated"]) for n in body["nodes"]] == [(NODE, False), ("sim-a", True)]
    html = client.get("/nodes").text
    assert f'data-node="{NODE}"' in html and "badge-observed" in html
    r = client.post(
        "/api/v1/nodes",
        json={"name": NODE, "topology": "topoDualSocketHT", "kubeletConfig": ""},
    )
    assert r.status_code == 409 and r.json()["error"]["reason"] == "AlreadyExists"


def test_observed_node_page(client: TestClient) -> None:
    r = client.get(f"/nodes/{NODE}")
    assert r.status_code == 200
    html = r.text
    assert "badge-observed" in html and "badge-sim" not in html
    assert 'id="admit"' not in html and "delete_node" not in html and ">Remove<" not in html
    assert 'id="observation"' in html and 'data-ready="true"' in html
    assert f'data-uid="{GHOST}" data-stale="true"' in html
    assert 'data-pod="ml/training"' in html
    assert "1.37 gate on" in html  # the reader that accepted the files
    # htmx asks for the map fragment
    frag = client.get(f"/nodes/{NODE}", headers={"HX-Request": "true"})
    assert frag.status_code == 200
    assert 'id="cpu-map"' in frag.text and "<html" not in frag.text


def test_observed_node_json_carries_provenance(client: TestClient, host: Host) -> None:
    body = client.get(f"/nodes/{NODE}.json").json()
    o = body["observation"]
    assert o["ready"] is True and o["observedAt"].endswith("Z")
    assert {s["source"] for s in o["sources"]} == {
        "sysfs",
        "checkpoint",
        "podresources",
        "kubelet-config",
    }
    assert all(s["observedAt"].endswith("Z") for s in o["sources"])
    assert [f["file"] for f in o["files"]] == [CPU_FILE, MEMORY_FILE]
    assert all(f["source"] == "checkpoint" for f in o["files"])
    assert o["stale"] == [
        {
            "source": "checkpoint",
            "file": CPU_FILE,
            "uid": GHOST,
            "container": "old",
            "cpus": "30-31",
            "memory": [],
        }
    ]
    assert body["pools"]["source"] == "podresources"
    ghost = [p for p in body["pods"] if p["uid"] == GHOST]
    assert ghost and ghost[0]["stale"] is True and ghost[0]["uidOnly"] is True
    named = next(p for p in body["pods"] if p["key"] == "ml/training")
    assert "stale" not in named
    detail = client.get(f"/api/v1/nodes/{NODE}").json()
    assert detail["observation"]["pods"] and detail["summary"]["simulated"] is False


def test_observed_podresources_api_is_the_kubelets_answer(client: TestClient, host: Host) -> None:
    r = client.get(f"/api/v1/nodes/{NODE}/podresources")
    assert r.status_code == 200 and r.json() == list_response_json(host.snapshot)
    r = client.get(f"/api/v1/nodes/{NODE}/podresources/ml/training")
    assert r.status_code == 200 and r.json()["podResources"]["name"] == "training"
    r = client.get(f"/api/v1/nodes/{NODE}/podresources/ml/nope")
    assert (
        r.status_code == 404
        and r.json()["error"]["message"] == "pod nope in namespace ml not found"
    )
    assert client.get(f"/api/v1/nodes/{NODE}/allocatable").json()["cpuIds"]


@pytest.mark.parametrize(
    ("method", "url", "kw"),
    [
        pytest.param("post", f"/api/v1/nodes/{NODE}/pods", {"content": demo.CLASSIC_POD, "headers": YAML}, id="admit"),
        pytest.param("delete", f"/api/v1/nodes/{NODE}/pods/ml/training", {}, id="remove-pod"),
        pytest.param("delete", f"/api/v1/nodes/{NODE}", {}, id="delete-node"),
    ],
)  # fmt: skip
def test_changes_to_the_observed_node_are_409(
    client: TestClient, method: str, url: str, kw: dict[str, Any]
) -> None:
    r = getattr(client, method)(url, **kw)
    assert r.status_code == 409
    error = r.json()["error"]
    assert error["reason"] == "Conflict"
    assert f"node '{NODE}' is an observed node (read-only)" in error["message"]
    assert client.get(f"/nodes/{NODE}").status_code == 200  # still there


def test_form_posts_to_the_observed_node_are_409_pages(client: TestClient) -> None:
    r = client.post(f"/nodes/{NODE}/admissions", data={"manifest": demo.CLASSIC_POD})
    assert r.status_code == 409 and "text/html" in r.headers["content-type"]
    assert "observed node (read-only)" in r.text
    for data in ({}, {"confirm": "yes"}):
        r = client.post(f"/nodes/{NODE}/pods/ml/training/remove", data=data)
        assert r.status_code == 409
        r = client.post(f"/nodes/{NODE}/delete", data=data)
        assert r.status_code == 409


def test_observed_pod_pages(client: TestClient) -> None:
    r = client.get(f"/nodes/{NODE}/pods/ml/training")
    assert r.status_code == 200 and "badge-observed" in r.text and "Remove pod" not in r.text
    r = client.get(f"/nodes/{NODE}/pods/~/{GHOST}")
    assert r.status_code == 200 and "stale" in r.text and f"UID {GHOST}" in r.text
    body = client.get(f"/nodes/{NODE}/pods/~/{GHOST}.json").json()
    assert body["pod"]["stale"] is True and body["podresources"] == {}
    r = client.get(f"/nodes/{NODE}/pods/frontend/web")  # PodResources only: no UID recorded
    assert r.status_code == 200 and "not recorded" in r.text


def test_readyz_and_metrics(client: TestClient) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json()["checks"]["observation"] == "ok"
    text = client.get("/metrics").text
    assert f'numascope_cpus{{node="{NODE}",numa_node="0",pool="reserved"}} 2.0' in text
    assert 'pod="training"' in text
    assert sample(text, "numascope_checkpoint_info", file=CPU_FILE) == (
        {"node": NODE, "file": CPU_FILE, "version": "V4", "policy": "static"},
        1.0,
    )
    assert sample(text, "numascope_checkpoint_info", file=MEMORY_FILE)[0]["version"] == "V3"
    assert sample(text, "numascope_checkpoint_checksum_valid", file=CPU_FILE)[1] == 1.0
    assert sample(text, "numascope_stale_checkpoint_entries", file=CPU_FILE)[1] == 1.0
    assert sample(text, "numascope_stale_checkpoint_entries", file=MEMORY_FILE)[1] == 0.0


def sample(text: str, name: str, **match: str) -> tuple[dict[str, str], float]:
    """The one sample of ``name`` whose labels include ``match``."""
    from prometheus_client.parser import text_string_to_metric_families

    found = [
        (dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, (name, match, found)
    return found[0]


def test_checksum_metric_turns_0_for_a_corrupt_file(host: Host) -> None:
    path = host.root / CPU_FILE
    # the inline checksum (read by older kubelets) and the data checksum (1.37) both wrong
    text = path.read_text().replace('"checksum":', '"checksum":1', 1)
    path.write_text(text.replace('"dataChecksum":', '"dataChecksum":1', 1))
    with TestClient(create_app(host.settings(observe=True))) as client:
        assert client.get(f"/nodes/{NODE}.json").status_code == 200  # observes: counts errors
        text = client.get("/metrics").text
    assert sample(text, "numascope_checkpoint_checksum_valid", file=CPU_FILE)[1] == 0.0
    assert sample(text, "numascope_source_errors_total", source="checkpoint")[1] >= 1


def test_readyz_ready_with_only_the_socket_missing(host: Host) -> None:
    # The state files were read: the agent serves its map and verdicts and says the socket is gone.
    settings = host.settings(observe=True, podresources_socket=str(host.base / "absent.sock"))
    with TestClient(create_app(settings)) as client:
        r = client.get("/readyz")
        assert r.status_code == 200
        body = r.json()
        assert body["status"] == "ready" and body["checks"]["observation"] == "ok"
        assert body["checks"]["podresources"] == "unavailable"
        assert body["checks"]["database"] == "ok"
        (warning,) = body["warnings"]
        assert warning.startswith("podresources: ") and "absent.sock" in warning
        assert r.headers["cache-control"] == "no-store"
        # PodResources routes say why they cannot answer; the page still shows the files
        r = client.get(f"/api/v1/nodes/{NODE}/podresources")
        assert r.status_code == 503 and "unavailable" in r.json()["error"]["message"]
        assert client.get(f"/nodes/{NODE}").status_code == 200
        metrics = client.get("/metrics").text
        assert 'numascope_source_errors_total{source="podresources"}' in metrics
        line = next(
            ln
            for ln in metrics.splitlines()
            if ln.startswith('numascope_source_errors_total{source="podresources"}')
        )
        assert float(line.split()[-1]) >= 1


def test_observe_off_lists_only_simulated_nodes(host: Host) -> None:
    with TestClient(create_app(host.settings(observe=False))) as client:
        assert client.get("/api/v1/nodes").json()["nodes"] == []
        assert client.get(f"/nodes/{NODE}").status_code == 404
        assert "observation" not in client.get("/readyz").json()["checks"]


def test_observe_defaults_to_on_when_the_kubelet_root_exists(host: Host, tmp_path: Path) -> None:
    assert host.settings().observe is True
    assert (
        host.settings(
            kubelet_root=tmp_path / "none", podresources_socket="/nonexistent.sock"
        ).observe
        is False
    )
    assert host.settings(kubelet_root=tmp_path / "none").observe is True  # the socket exists


def test_a_failing_observation_is_shown_not_raised(host: Host) -> None:
    def boom(settings: Settings) -> Any:
        raise RuntimeError("bug")

    obs = NodeObserver(host.settings(), observe=boom)
    summary = obs.summary()
    assert summary.load_error == "observer: observation failed: RuntimeError: bug"
    with pytest.raises(ObservedNodeUnavailableError):
        obs.node_view()
    assert list(obs.metric_samples()) == [] and not obs.ready


# -- the fleet's fit: dry runs on a copy of the observed node (app.services.nodes.observed) --
# The machine's files must match its sysfs exactly (a memory checkpoint written for other
# hugepage sizes fails the memory manager's start-up check, as in the kubelet), so this host's
# engine runs on the topology discovered from its own fake sysfs.


def _sysfs_engine(sysfs: Path) -> Node:
    from app.adapters.sysfs import discover_host

    topology = discover_host(sysfs, use_cpuinfo=False, name="sim")
    config = parse_kubelet_config_text(demo.POD_SCOPE_CONFIG, "1.37")
    node = Node("sim", topology, config, clock=lambda: 100.0)
    for text in PODS:
        for pod in parse_pod_manifests(text):
            assert node.admit(pod).admitted
    return node


@pytest.fixture
def sysfs_host(tmp_path: Path) -> Iterator[Host]:
    base = Path(tempfile.mkdtemp(prefix="h12-", dir="/tmp"))
    try:
        sysfs = fake_sysfs_from_topology(get_preset("server-2s-4numa-128t")).write(tmp_path)
        node = _sysfs_engine(sysfs)
        root = base / "kubelet"
        root.mkdir()
        statefiles.write_files(root, _files_with_ghost(node))
        (root / "config.yaml").write_text(demo.POD_SCOPE_CONFIG)
        snap = node.snapshot()
        for p in snap.pods:
            (root / "pods" / p.uid).mkdir(parents=True)
        sock = base / "pr.sock"
        with PodResourcesServer(lambda: snap, str(sock)):
            yield Host(node, snap, root, sysfs, sock, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(
    ("manifest", "fits"),
    [
        pytest.param(demo.classic_pod("probe", "fit", "4", "4Gi"), True, id="guaranteed-4"),
        # 40 exclusive CPUs: more than one NUMA node has (single-numa-node, pod scope).
        pytest.param(demo.classic_pod("wide", "fit", "40", "8Gi"), False, id="guaranteed-40"),
        pytest.param(demo.bubble_pod("bub", "fit", 6, {"app": 4}, ("side",)), True, id="pod-level"),
    ],
)
def test_a_dry_run_on_the_observed_node_is_its_engines_answer_on_a_copy(
    sysfs_host: Host, manifest: str, fits: bool
) -> None:
    before = tree_state(sysfs_host.root)
    with TestClient(create_app(sysfs_host.settings(observe=True))) as client:
        pods_before = client.get(f"/api/v1/nodes/{NODE}").json()["pods"]
        r = client.post(f"/api/v1/nodes/{NODE}/pods?dryRun=true", content=manifest, headers=YAML)
        assert r.status_code == 200, r.text
        answer = r.json()
        pods_after = client.get(f"/api/v1/nodes/{NODE}").json()["pods"]
    assert answer["dryRun"] is True and answer["node"] == NODE
    # The kubelet's own engine on the same pods without the ghost entry: what that kubelet
    # judges once removeStaleState released the ghost's CPUs 30-31 at its next Allocate.
    twin = _sysfs_engine(sysfs_host.sysfs)
    expected = [twin.dry_run(p).to_dict() for p in parse_pod_manifests(manifest)]
    keys = ("admitted", "pod", "reason", "message", "hints")
    assert [{k: v for k, v in got.items() if k in keys} for got in answer["results"]] == expected
    assert answer["admitted"] is fits
    if fits:
        assert answer["results"][0]["allocation"]["containers"]
    else:
        assert answer["reason"] == "TopologyAffinityError"
    assert tree_state(sysfs_host.root) == before  # the kubelet's files were only read
    assert pods_after == pods_before  # nothing was admitted


def test_the_copy_releases_what_stale_entries_hold(sysfs_host: Host) -> None:
    from app.domain.node.state import restore_managers
    from app.services.nodes.inputs import build_engine_node
    from app.services.nodes.observed import release_stale

    twin = _sysfs_engine(sysfs_host.sysfs)
    files = {
        CPU_FILE: (sysfs_host.root / CPU_FILE).read_bytes(),
        MEMORY_FILE: (sysfs_host.root / MEMORY_FILE).read_bytes(),
    }
    copy = build_engine_node(NODE, twin.topology, twin.config, lambda: 100.0)
    restore_managers(copy, files)
    assert copy.cpu_state is not None and twin.cpu_state is not None
    assert GHOST in copy.cpu_state.assignments
    assert not copy.cpu_state.get_default_cpu_set() & CPUSet.parse("30-31")
    release_stale(copy, {GHOST})
    # As removeStaleState leaves it: the ghost's CPUs back in the default set, the rest as is.
    assert GHOST not in copy.cpu_state.assignments
    assert copy.cpu_state.get_default_cpu_set() == twin.cpu_state.get_default_cpu_set()
    assert copy.cpu_state.assignments == twin.cpu_state.assignments
    assert copy.cpu_state.pod_entries == twin.cpu_state.pod_entries


def test_a_pod_already_on_the_observed_node_is_a_conflict_in_a_dry_run(sysfs_host: Host) -> None:
    with TestClient(create_app(sysfs_host.settings(observe=True))) as client:
        r = client.post(
            f"/api/v1/nodes/{NODE}/pods?dryRun=true", content=demo.CLASSIC_POD, headers=YAML
        )
    assert r.status_code == 409
    assert r.json()["error"]["reason"] == "AlreadyExists"
