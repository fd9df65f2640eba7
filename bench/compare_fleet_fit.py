"""Fleet fit answers of this checkout against a reference (``--ref``, default ``main``): the
same questions to a real ``numascope serve --hub --demo-fleet N`` process of each, answers
compared byte for byte once the ids a dry run draws at random (batch and pod uids) are masked.
A change that makes fits cheaper must not change one row, rank, flag, page or byte.

Run: .venv/bin/python bench/compare_fleet_fit.py [--nodes 1000] [--ref main]
Prints one line per question (same/DIFFERENT and the body's size); exits 1 on a difference.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _hub import compare, hub_process
from bench_fleet_fit import SHAPES, YAML

from app.services.fleet.score import STRATEGIES

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PAGES = (
    {"show": "all"},
    {"show": "fits", "offset": "37", "limit": "250"},
    {"show": "clean", "limit": "1000"},
    {"show": "all", "offset": "900", "limit": "200"},
)
answers: dict[str, dict[str, bytes]] = {}


def run(nodes: int, src: Path | None) -> dict[str, str]:
    """Every question's masked answer, kept in ``answers`` under the version's label."""
    got: dict[str, bytes] = {}
    with hub_process(nodes, src) as hub:
        for label, pod in SHAPES:
            for strategy in STRATEGIES:
                for again in ("first", "again"):
                    r = hub.client.post(
                        "/api/v1/fleet/fit",
                        params={"strategy": strategy},
                        content=pod.encode(),
                        headers=YAML,
                        timeout=600.0,
                    )
                    got[f"POST {label} {strategy} {again}"] = _masked(r)
                for page in PAGES:
                    params = {"manifest": pod, "strategy": strategy, **page}
                    r = hub.client.get("/fleet/fit.json", params=params, timeout=600.0)
                    got[f"fit.json {label} {strategy} {page}"] = _masked(r)
    answers["ref" if src is not None else "this"] = got
    return {k: str(len(v)) for k, v in got.items()}


def _masked(r: object) -> bytes:
    status = getattr(r, "status_code", 0)
    content = getattr(r, "content", b"")
    return f"{status} ".encode() + UUID.sub(b"<uuid>", content)


if __name__ == "__main__":
    compare("fleet fit answers (masked body bytes)", run)
    ref, this = answers.get("ref"), answers["this"]
    if ref is None:
        sys.exit(0)
    differ = [k for k in this if ref.get(k) != this[k]]
    for k in this:
        print(f"{'DIFFERENT' if k in differ else 'same':>9}  {k}")
    sys.exit(1 if differ else 0)
