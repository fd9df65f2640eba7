"""CPU cost of the typed contracts on a 512-thread node with ``--pods`` pods (issue 18 §4).

Run: .venv/bin/python bench/bench_contracts.py [--pods 250] [--runs 15]
Creates ``server-2s-8numa-512t`` with the demo-512 configuration under release 1.37 in a
throw-away SQLite database and admits ``--pods`` pods (``_web_node.pod_manifests``). For each
document a node writes — the node view (the page's JSON twin), a dry run's admission batch, a
restart rehearsal's report, a checkpoint report — prints the median process CPU time of
writing it (``to_dict``, or the view's JSON bytes) beside the contract check alone (its model
validating the finished document: what the hub does with an agent's answer, and the producer's
own check), and the check's share. Run on an older checkout, where a contract does not exist
yet, the check column reads ``-`` (the node view's check is then the unbounded view model's).
Prints figures only.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from _common import cpu_time_calls, tmp_node_service
from _web_node import TOPOLOGY, pod_manifests

from app.services.checkpoints.inspection import inspect_content
from app.services.demo import SERVER_CONFIG
from app.services.node_views import NodeView
from app.services.nodes.stored import StoredNode

NODE = "bench-contracts"


def cpu_ms(fn: Callable[[], object], runs: int) -> float:
    """Median process CPU time of ``fn`` in ms (one untimed warm-up call)."""
    return cpu_time_calls(fn, runs).median_ms


def contract(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(f"app.contracts.{module}"), name)
    except (ImportError, AttributeError):
        return None


def line(label: str, write: float, check: float | None) -> str:
    if check is None:
        return f"{label:<22} write {write:8.2f} ms   check        -"
    share = check / write if write else 0.0
    return f"{label:<22} write {write:8.2f} ms   check {check:8.2f} ms   ({share:.0%} of write)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tmp_node_service() as service:
        service.create(NODE, TOPOLOGY, SERVER_CONFIG, "1.37")
        for text in pod_manifests(args.pods):
            service.admit(NODE, text)
        node = StoredNode(service, NODE)
        view = node.node_view()
        print(f"node {TOPOLOGY}, {len(view.pods)} pods, median of {args.runs} runs (CPU time)")

        doc = view.model_dump(mode="json")
        write = cpu_ms(view.model_dump_json, args.runs)
        print(line("node view", write, cpu_ms(lambda: NodeView.model_validate(doc), args.runs)))

        probe = pod_manifests(args.pods + 1)[-1]  # a pod the node does not have yet
        batch = node.dry_run(probe)
        answer = contract("admission", "AdmissionAnswer")
        d = batch.to_dict()
        check = None if answer is None else cpu_ms(lambda: answer.model_validate(d), args.runs)
        print(line("admission batch", cpu_ms(batch.to_dict, args.runs), check))

        rehearsal = node.rehearse("1.36", None)
        report = contract("restart", "RestartReport")
        d = rehearsal.to_dict()
        check = None if report is None else cpu_ms(lambda: report.model_validate(d), args.runs)
        print(line("restart report", cpu_ms(rehearsal.to_dict, args.runs), check))

        text = node.state_files()["cpu_manager_state"]
        inspection = inspect_content(text.encode(), source="cpu_manager_state")
        checkpoint = contract("checkpoint", "CheckpointReport")
        d = inspection.to_dict()
        check = (
            None if checkpoint is None else cpu_ms(lambda: checkpoint.model_validate(d), args.runs)
        )
        print(line("checkpoint report", cpu_ms(inspection.to_dict, args.runs), check))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
