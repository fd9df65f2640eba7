"""Take a node away: its state files, its pods as YAML, its pools as CSV.

* ``state_files_zip`` — a zip of the node's state directory exactly as its kubelet would have
  written it (``cpu_manager_state``, ``memory_manager_state`` in the release's formats, byte
  for byte, and Numascope's ``pods.json``), ready for ``numascope checkpoint inspect`` or
  ``numascope simulate --state-dir``. Simulated nodes only: an observed node's files are the
  kubelet's own, on that node.
* ``pods_yaml`` — the node's pods as a multi-document YAML stream of v1 Pod manifests (a
  simulated node's normalised manifests, which ``numascope simulate`` admits again; an
  observed node's pods as far as PodResources and the state files describe them).
* ``pools_csv`` — one row per NUMA node (and a total row): CPU counts and lists of every pool,
  as on the page's pools table.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from typing import Any

import yaml

from app.domain.node.state_files import PODS_FILE_NAME
from app.services.node_views import NodeView, NumaPoolRow
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.errors import ReadOnlyNodeError

ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed: the same state gives the same bytes

POOLS_CSV_HEADER = (
    "numa_node",
    "cpus",
    "cpu_ids",
    "reserved",
    "reserved_ids",
    "node_shared",
    "node_shared_ids",
    "pod_shared",
    "pod_shared_ids",
    "exclusive",
    "exclusive_ids",
    "available",
)


def state_files_zip(catalog: NodeCatalog, node: str) -> bytes:
    files = catalog.get(node).state_files()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{node}/{name}", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, files[name])
    return buf.getvalue()


def _observed_manifest(row: Any) -> dict[str, Any]:
    containers = []
    for c in row.containers:
        containers.append(
            {
                "name": c.name,
                "resources": {
                    "requests": {"cpu": f"{c.cpu_request_milli}m"},
                    "limits": {"cpu": f"{c.cpu_limit_milli}m"},
                },
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": row.name, "namespace": row.namespace, "uid": row.uid},
        "spec": {"containers": containers},
        "status": {"qosClass": row.qos_class} if row.qos_class else {},
    }


def pods_yaml(catalog: NodeCatalog, node: str) -> str:
    source = catalog.get(node)
    try:  # the manifests as they were submitted
        doc = json.loads(source.state_files()[PODS_FILE_NAME])
        manifests = [p["manifest"] for p in doc["pods"]]
    except ReadOnlyNodeError:  # observed or remote: what PodResources and the state files say
        manifests = [_observed_manifest(r) for r in source.node_view().pods]
    if not manifests:
        return ""
    return yaml.safe_dump_all(manifests, sort_keys=False, explicit_start=True)


def pools_csv(catalog: NodeCatalog, node: str) -> str:
    """The node's CPU pools: a row per NUMA node, then the node's totals."""
    view = catalog.get(node).node_view()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(POOLS_CSV_HEADER)
    writer.writerows(_numa_pools_row(r) for r in view.numa_pools)
    writer.writerow(_all_pools_row(view))
    return out.getvalue()


def _numa_pools_row(r: NumaPoolRow) -> tuple[object, ...]:
    return (
        r.numa_node,
        r.counts.total,
        r.cpus.cpus,
        r.counts.reserved,
        r.reserved.cpus,
        r.counts.node_shared,
        r.node_shared.cpus,
        r.counts.pod_shared,
        r.pod_shared.cpus,
        r.counts.exclusive,
        r.exclusive.cpus,
        r.available,
    )


def _all_pools_row(view: NodeView) -> tuple[object, ...]:
    """The totals: the node-wide pools have CPU lists, the per-pod pools only counts."""
    t = view.summary.cpus
    return (
        "all",
        t.total,
        "",
        t.reserved,
        view.pools["reserved"]["cpus"],
        t.node_shared,
        view.pools["nodeShared"]["cpus"],
        t.pod_shared,
        "",
        t.exclusive,
        "",
        sum(r.available for r in view.numa_pools),
    )
