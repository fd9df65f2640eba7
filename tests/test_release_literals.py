"""Releases are objects: no module of app/ spells a kubelet release (issue 18, point 3).

Every release-dependent rule asks the release table, ``app/domain/releases.py``. The scan reads
every string literal of app/ (docstrings aside; f-string parts included) and looks for a
Kubernetes minor version ``1.10``-``1.39`` standing alone (``nginx:1.27`` is an image tag, not a
release). Allowed: the table itself, the feature gate data it reads per release
(``feature_gate_tables.py``, which also records the release each gate was locked in), and the
checkpoint reader, which parses the releases users type (``<=1.17``, ``1.18-1.35``...).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"
ALLOWED = {
    "app/domain/releases.py",
    "app/domain/feature_gate_tables.py",
    "app/domain/checkpoint/reader.py",
}
RELEASE = re.compile(r"(?<![\w:.])1\.[1-3][0-9](?![\w.])")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def release_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and RELEASE.search(node.value)
    ]


def test_the_scan_finds_a_release(tmp_path: Path) -> None:
    """The scan is not blind: these spell releases, these do not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Follows policy_static.go, v1.37."""\n'
        'def f(release):\n    """1.36 only."""\n    return release == "1.37" or f"in {release} 1.38"\n'
    )
    assert [line for line, _ in release_literals(module)] == [4, 4]
    assert RELEASE.search("fixed in 1.38")
    assert RELEASE.search("1.18–1.35 family")
    assert not RELEASE.search("nginx:1.27")
    assert not RELEASE.search("1.375 GiB")
    assert not RELEASE.search("v1.2.3")


def test_at_most_the_allowed_modules_spell_a_release() -> None:
    offenders = {}
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP.parent).as_posix()
        found = release_literals(path)
        if found and rel not in ALLOWED:
            offenders[rel] = found[:3]
    assert offenders == {}, "ask app.domain.releases instead of spelling a release: " + repr(
        offenders
    )
    assert len(ALLOWED) <= 4
