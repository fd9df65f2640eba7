"""The import graph of ``app/``, read from the source with ``ast``.

Every ``import`` and ``from … import`` counts: at module level, inside a function (a deferred
import still ties the two modules together) and under ``if TYPE_CHECKING:`` (an annotation is
a dependency too). Relative imports are resolved against the importing module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"


def module_names() -> dict[str, Path]:
    """Every module and package of ``app/`` by dotted name."""
    out: dict[str, Path] = {}
    for path in APP.rglob("*.py"):
        parts = list(path.relative_to(APP.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_names(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """What ``name`` imports: app modules by their own name, anything else as written."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
        stack.extend(ast.iter_child_nodes(node))
    return found


def app_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The app modules ``name`` imports (a submodule importing its own package is no edge)."""
    found = imported_names(name, path, modules)
    return {m for m in found if m in modules and m != name and not name.startswith(m + ".")}
