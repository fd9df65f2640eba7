"""Pods for tests, built one way each: as the domain's ``Pod`` (``budget_pod``), as a manifest
(``pod_json``: JSON text, which keeps any character of a name as it is; ``pod_list``: a YAML
``List`` of small Guaranteed pods). The demo's own pods (``app.services.demo.classic_pod``…)
are the project's, not the tests'."""

from __future__ import annotations

import json

from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.quantity import Quantity


def budget_pod(
    uid: str,
    budget: str | None,
    *containers: Container,
    inits: tuple[Container, ...] = (),
    memory: str = "1Gi",
    limit: str | None = None,
) -> Pod:
    """A pod named ``uid`` in ``default`` with pod-level resources (``spec.resources``: a CPU
    ``budget`` — limit ``limit`` if given — and ``memory``), or none when ``budget`` is
    ``None``."""
    if budget is None:
        return Pod(uid, uid, "default", containers, inits, None)
    req = {"cpu": Quantity.parse(budget), "memory": Quantity.parse(memory)}
    lim = {"cpu": Quantity.parse(limit or budget), "memory": Quantity.parse(memory)}
    return Pod(uid, uid, "default", containers, inits, ResourceRequirements(req, lim))


def pod_json(
    name: str,
    namespace: str = "default",
    container: str = "main",
    uid: str = "",
    cpu: str = "1",
    memory: str = "256Mi",
) -> str:
    """A Pod manifest as JSON text with one container of CPU and memory limits."""
    meta = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    limits = {"cpu": cpu, "memory": memory}
    spec = {"containers": [{"name": container, "resources": {"limits": limits}}]}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def pod_list(n: int, cpus: str = "1") -> str:
    """A ``List`` of ``n`` pods ``p0``… in namespace ``batch``, each of ``cpus`` CPUs and
    100Mi."""
    items = "\n".join(
        f"- {{apiVersion: v1, kind: Pod, metadata: {{name: p{i}, namespace: batch}}, spec: "
        f"{{containers: [{{name: main, image: x, resources: {{limits: {{cpu: '{cpus}', "
        f"memory: 100Mi}}}}}}]}}}}"
        for i in range(n)
    )
    return f"apiVersion: v1\nkind: List\nitems:\n{items}\n"


def guaranteed_yaml(name: str, namespace: str, uid: str, cpu: str, memory: str) -> str:
    """A Guaranteed pod as YAML text with its ``uid``: one container ``app`` requesting (and
    limited to) ``cpu`` and ``memory``."""
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}, uid: {uid}}}
spec:
  containers:
  - name: app
    resources:
      requests: {{cpu: "{cpu}", memory: {memory}}}
      limits: {{cpu: "{cpu}", memory: {memory}}}
"""
