"""Conformance kind ``kubelet_restart``: a kubelet of one release starts on state files and
re-admits pods (``app.domain.restart``; cases in ``tests/conformance/restart.json``,
documented in ``docs/restart-json.md``).

Inputs: ``topology`` (a fixture), ``kubelet_config`` (a KubeletConfiguration object),
``release``, ``feature_gates`` (over the configuration's), ``files`` (``cpu_manager_state`` /
``memory_manager_state`` text, ``null`` for no file), ``pods`` (README §2.4 pods in admission
order; absent: the pods are not known, only the start-up runs) and ``state_dir``.

Expected (each optional): ``started``; ``error`` (exact, ``""`` when it started) or
``error_contains`` (a text or a list of texts); ``lost``; ``pods`` (uid -> ``outcome``,
``pod_cpuset`` and ``containers`` name -> CPU set or ``null``); ``default_cpuset`` of the
restarted CPU manager; ``written`` (file -> the version the release writes);
``written_cpu_state`` (the ``cpu_manager_state`` it writes, read back in the normalised form of
README §4.2).
"""

from __future__ import annotations

from typing import Any

from app.conformance_kinds.common import (
    Case,
    ConformanceInputError,
    expect_cpuset,
    expect_equal,
    topology_of,
)
from app.domain.checkpoint import inspect
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError, kubelet_config_from_dict
from app.domain.node.state_files import render_state_files, state_file_versions
from app.domain.pod.manifest import pod_from_conformance
from app.domain.restart import RestartResult, restart_node


def _restart(case: Case) -> tuple[RestartResult, KubeletConfig]:
    """The case's kubelet restarted on its files (with its pods when given)."""
    inputs = case.inputs
    topology = topology_of(case)
    config_obj = dict(inputs.get("kubelet_config") or {})
    gates = inputs.get("feature_gates")
    if gates:
        config_obj["featureGates"] = {**(config_obj.get("featureGates") or {}), **gates}
    try:
        config = kubelet_config_from_dict(config_obj, inputs["release"])
    except KubeletConfigError as exc:
        raise ConformanceInputError(f"case {case.id}: kubelet_config: {exc}") from None
    raw_pods = inputs.get("pods")
    pods = None
    if raw_pods is not None:
        pods = [(pod_from_conformance(p), float(i)) for i, p in enumerate(raw_pods)]
    result = restart_node(
        topology,
        config,
        inputs.get("files") or {},
        pods,
        state_dir=inputs.get("state_dir", "/var/lib/kubelet"),
        name="conformance",
    )
    return result, config


def _check_start(problems: list[str], expected: dict[str, Any], result: RestartResult) -> None:
    if "started" in expected:
        expect_equal(problems, "started", expected["started"], result.started)
    if "error" in expected:
        expect_equal(problems, "error", expected["error"], result.error or "")
    contains = expected.get("error_contains")
    for text in [contains] if isinstance(contains, str) else contains or []:
        if text not in (result.error or ""):
            problems.append(f"error: expected it to contain {text!r}, got {result.error!r}")
    if "lost" in expected:
        expect_equal(problems, "lost", expected["lost"], list(result.lost))


def _check_pods(problems: list[str], expected: dict[str, Any], result: RestartResult) -> None:
    by_uid = {p.uid: p for p in result.pods}
    for uid, want in (expected.get("pods") or {}).items():
        got = by_uid.get(uid)
        if got is None:
            problems.append(f"pods[{uid}]: not re-admitted")
            continue
        if "outcome" in want:
            expect_equal(problems, f"pods[{uid}].outcome", want["outcome"], got.outcome)
        if "pod_cpuset" in want:
            expect_cpuset(problems, f"pods[{uid}].pod_cpuset", want["pod_cpuset"], got.budget_after)
        after = {c.name: c.after for c in got.containers}
        for name, cset in (want.get("containers") or {}).items():
            expect_cpuset(problems, f"pods[{uid}].containers[{name}]", cset, after.get(name))


def _check_written(
    problems: list[str], expected: dict[str, Any], result: RestartResult, config: KubeletConfig
) -> None:
    node = result.node
    if "default_cpuset" in expected:
        actual = None if node is None else node.cpu_state.default_cpuset
        expect_cpuset(problems, "default_cpuset", expected["default_cpuset"], actual)
    want_state = expected.get("written_cpu_state")
    if want_state is not None:
        if node is None:
            problems.append("written_cpu_state: the kubelet did not start, nothing was written")
        else:
            text = render_state_files(node)["cpu_manager_state"]
            state = inspect(text, "cpu").state
            expect_equal(
                problems,
                "written_cpu_state",
                want_state,
                None if state is None else state.to_dict(),
            )
    written = expected.get("written")
    if written:
        versions = state_file_versions(config)
        actual_written = {
            "cpu_manager_state": versions.cpu,
            "memory_manager_state": versions.memory,
        }
        for name, version in written.items():
            expect_equal(problems, f"written[{name}]", version, actual_written.get(name))


def kubelet_restart(case: Case) -> list[str]:
    result, config = _restart(case)
    problems: list[str] = []
    _check_start(problems, case.expected, result)
    _check_pods(problems, case.expected, result)
    _check_written(problems, case.expected, result, config)
    return problems


HANDLERS: dict[str, Any] = {"kubelet_restart": kubelet_restart}
