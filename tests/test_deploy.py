"""The DaemonSet keeps the read-only promises of users.md §5.5 and runs a real command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from app.cli import build_parser

MANIFEST = Path(__file__).resolve().parents[1] / "deploy" / "daemonset.yaml"


def _docs() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text()) if d}


def test_the_agent_is_read_only_and_unprivileged() -> None:
    ds = _docs()["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["privileged"] is False
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for name, mount in mounts.items():
        if "hostPath" in volumes[name] and name != "pod-resources":
            assert mount.get("readOnly") is True, name
    assert {"operator": "Exists"} in pod["tolerations"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_the_container_command_parses() -> None:
    container = _docs()["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["numascope"]
    args = build_parser().parse_args(container["args"])
    assert args.command == "serve"
    assert args.demo is False
    # The lean agent (issue 20 pt 7): no database, no simulated nodes.
    assert args.simulated is False and args.observe is True
    env = {e["name"] for e in container["env"]}
    assert not env & {"NUMASCOPE_DATABASE_URL", "NUMASCOPE_STATE_DIR"}


def test_the_namespace_allows_host_paths() -> None:
    ns = _docs()["Namespace"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
