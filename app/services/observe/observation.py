"""One observation of the real node Numascope runs on (read-only): ``observe_node(settings)``.

An observation reads, in this order and each at most once:

* **sysfs** (``Settings.sysfs_root``): the topology, as the kubelet discovers it
  (``app.adapters.sysfs.discover_host``);
* **the kubelet root dir** (``Settings.kubelet_root``, through the read-only, size-capped
  ``app.adapters.kubelet.KubeletRootDir``): ``cpu_manager_state`` and ``memory_manager_state``
  read the way the newest kubelet reads them (``app.domain.observed.read_state_file``), and the
  pod UIDs of ``pods/``;
* **the kubelet configuration**: ``Settings.kubelet_config_file``, else ``<root>/config.yaml``
  when it exists; parsed for the release the state files point to;
* **PodResources** ``List`` and ``GetAllocatableResources`` on ``Settings.podresources_socket``
  (``app.adapters.grpc.client.PodResourcesClient``: 10 s timeout, 16 MiB receive limit),
  the way node-feature-discovery's topology-updater and resource-topology-exporter read them.

``app.domain.observed.build_observed_node`` merges the answers into a ``NodeSnapshot``
(``simulated=False``). A source that fails does not stop the others: its error is kept on its
``SourceStatus`` and the rest is shown. Nothing is ever written. Re-observing on request and
the pages built from an observation are ``app.services.observe.observer``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from app.adapters.grpc.client import DEFAULT_TIMEOUT, PodResourcesClient, PodResourcesClientError
from app.adapters.kubelet import KubeletDirError, KubeletRootDir
from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.sysfs import SysfsError, discover_host
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError
from app.domain.observed import (
    SOURCE_CHECKPOINT,
    SOURCE_CONFIG,
    SOURCE_PODRESOURCES,
    SOURCE_SYSFS,
    Observation,
    ObservedNode,
    SourceStatus,
    StateFileReading,
    build_observed_node,
    infer_config,
    read_state_file,
)
from app.domain.podresources import AllocatableResourcesResponse, ListPodResourcesResponse
from app.domain.topology.model import CPUTopology
from app.settings import Settings


def node_name_of(settings: Settings) -> str:
    """The observed node's name: ``NODE_NAME`` (downward API) or the host name."""
    name = (settings.node_name or "").strip()
    return name or socket.gethostname() or "localhost"


# -- one observation -------------------------------------------------------------------------


def _read_topology(
    settings: Settings, name: str, now: float
) -> tuple[CPUTopology | None, SourceStatus]:
    detail = str(settings.sysfs_root)
    try:
        topo = discover_host(settings.sysfs_root, use_cpuinfo=settings.cpuinfo, name=name)
    except SysfsError as exc:
        return None, SourceStatus(SOURCE_SYSFS, now, False, detail, (str(exc),))
    except OSError as exc:
        return None, SourceStatus(SOURCE_SYSFS, now, False, detail, (f"{detail}: {exc}",))
    return topo, SourceStatus(SOURCE_SYSFS, now, True, detail)


def _read_state_files(
    root: KubeletRootDir, now: float
) -> tuple[StateFileReading | None, StateFileReading | None, tuple[str, ...] | None, SourceStatus]:
    detail = str(root.path)
    try:
        root.check()
    except KubeletDirError as exc:
        return None, None, None, SourceStatus(SOURCE_CHECKPOINT, now, False, detail, (exc.message,))
    readings: dict[str, StateFileReading] = {}
    errors: list[str] = []
    ok = True
    for manager in ("cpu", "memory"):
        path = root.state_path(manager)
        content: bytes | None = None
        read_error: str | None = None
        try:
            content = root.read_state(manager)
        except KubeletDirError as exc:
            read_error = exc.message
            ok = False
        reading = read_state_file(
            content,
            manager,
            path=str(path),
            state_dir=str(root.path),
            observed_at=now,
            read_error=read_error,
        )
        readings[manager] = reading
        if reading.file.problem is not None:
            errors.append(reading.file.problem)
    uids = root.pod_uids()
    status = SourceStatus(SOURCE_CHECKPOINT, now, ok, detail, tuple(errors))
    return (
        readings["cpu"],
        readings["memory"],
        tuple(uids) if uids is not None else None,
        status,
    )


def _read_config(
    root: KubeletRootDir, release: str, now: float
) -> tuple[KubeletConfig | None, str | None, str | None, SourceStatus]:
    path = root.config_path()
    if path is None:
        return None, None, None, SourceStatus(SOURCE_CONFIG, now, True, "no configuration file")
    try:
        text = root.read_config_text()
    except KubeletDirError as exc:
        return (
            None,
            str(path),
            None,
            SourceStatus(SOURCE_CONFIG, now, False, str(path), (exc.message,)),
        )
    if text is None:
        return None, None, None, SourceStatus(SOURCE_CONFIG, now, True, "no configuration file")
    try:
        config, notes = _parse_running_config(text, release, path)
    except KubeletConfigError as exc:
        status = SourceStatus(SOURCE_CONFIG, now, False, str(path), (f"{path}: {exc}",))
        return None, str(path), text, status
    return config, str(path), text, SourceStatus(SOURCE_CONFIG, now, True, str(path), notes)


def _parse_running_config(
    text: str, release: str, path: Path
) -> tuple[KubeletConfig, tuple[str, ...]]:
    """The running kubelet's configuration, with notes. The kubelet runs with its feature
    gates, so it accepted them: a gate this release's table refuses means the table is behind
    or the node runs another release. Read on without the gate check, and say so."""
    try:
        return parse_kubelet_config_text(text, release), ()
    except KubeletConfigError as exc:
        if not exc.field.startswith("featureGates."):
            raise
        gate_error = exc
    try:
        config = parse_kubelet_config_text(text, release, check_gates=False)
    except KubeletConfigError:
        raise gate_error from None
    note = (
        f"{path}: {gate_error} (a kubelet {release} would refuse this; the running kubelet "
        "accepted it, so its release or Numascope's gate table differs)"
    )
    return config, (note,)


def _read_podresources(
    address: str, timeout: float, now: float
) -> tuple[ListPodResourcesResponse | None, AllocatableResourcesResponse | None, SourceStatus]:
    try:
        with PodResourcesClient(address, timeout=timeout) as client:
            listed = client.list()
            allocatable = client.allocatable()
    except PodResourcesClientError as exc:
        return None, None, SourceStatus(SOURCE_PODRESOURCES, now, False, address, (exc.message,))
    return listed, allocatable, SourceStatus(SOURCE_PODRESOURCES, now, True, address)


def observe_node(
    settings: Settings,
    *,
    name: str | None = None,
    clock: Callable[[], float] = time.time,
    timeout: float = DEFAULT_TIMEOUT,
) -> ObservedNode:
    """Observe the node described by ``settings`` once (never raises for a failing source)."""
    now = clock()
    node = name if name is not None else node_name_of(settings)
    topology, sysfs_status = _read_topology(settings, node, now)
    root = KubeletRootDir(settings.kubelet_root, config_file=settings.kubelet_config_file)
    cpu, memory, pod_uids, checkpoint_status = _read_state_files(root, now)
    release, _ = infer_config(cpu, memory)
    config, config_path, config_text, config_status = _read_config(root, release, now)
    listed, allocatable, pr_status = _read_podresources(settings.podresources_socket, timeout, now)
    notes: list[str] = []
    if pod_uids is None and checkpoint_status.ok:
        notes.append(f"{root.path / 'pods'} cannot be listed: pod directories are not checked")
    observation = Observation(
        name=node,
        observed_at=now,
        topology=topology,
        config=config,
        config_path=config_path,
        config_text=config_text,
        cpu=cpu,
        memory=memory,
        pod_uids=pod_uids,
        list_response=listed,
        allocatable=allocatable,
        sources=(sysfs_status, checkpoint_status, pr_status, config_status),
        notes=tuple(notes),
    )
    return build_observed_node(observation)
