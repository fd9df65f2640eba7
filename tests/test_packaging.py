"""What the image installs: ``requirements.lock`` pins every runtime dependency of
``pyproject.toml`` (the Dockerfile installs the lock with ``--no-deps``, so a dependency missing
from it would only show as an ImportError in the running image), the files the package reads at
run time are inside it (``app/templates``, ``app/static``, ``app/migrations`` link to the
project's folders and ``[tool.setuptools.package-data]`` ships them), and the NodeResourceTopology
publisher runs without the ``kubernetes`` package (dropped from the image: 148 MiB)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
    assert match, spec
    return canonical(match.group(0))


def test_the_lock_pins_every_runtime_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {requirement_name(d) for d in project["dependencies"]}
    pinned: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"not pinned: {line}"
            pinned[canonical(name)] = version
    assert wanted - set(pinned) == set(), "regenerate requirements.lock (see its header)"
    assert "kubernetes" not in pinned


def test_run_time_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = config["package-data"]["app"]
    for folder in ("templates", "static", "migrations"):
        link = ROOT / "app" / folder
        assert link.is_symlink() and link.resolve() == ROOT / folder
        tracked = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", folder],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert tracked, folder
        for path in tracked:
            if Path(path).name == ".gitkeep":
                continue
            # As setuptools reads the globs: '**/' any folders deep, '*' within one name.
            assert any(glob_match(path, g) for g in globs), f"{path} is not in the wheel"


def glob_match(path: str, pattern: str) -> bool:
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
    return re.fullmatch(regex, path) is not None


def test_the_publisher_does_not_import_the_kubernetes_package() -> None:
    code = (
        "import sys, app.adapters.nrt_publisher, app.services.nrt_loop; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]"
