"""Figures about the shape of ``app/``: long functions, release strings, import edges.

A figure script, not a test: it prints numbers to put in a note and compare before and after a
change. ``python scripts/code_figures.py`` prints three figures; ``--list`` adds each long
function (``path:line name length``) and each module that spells a release string.

- A function's length runs from its ``def`` line to its last line (decorators not counted);
  "long" means over 40 lines, the threshold of issue 18.
- A module spells a release when ``tests/test_release_literals.py`` (the test that keeps
  releases in the release table) finds one in it: a standalone ``1.10``-``1.39`` in a string
  literal or an f-string part, docstrings aside. The modules that test allows count too.
- Import edges are those of ``tests/import_graph.py`` (the graph the import-circle test reads),
  counted once per importing module and imported app module.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.import_graph import APP, app_imports, module_names  # noqa: E402
from tests.test_release_literals import release_literals  # noqa: E402

LONG = 40


def long_functions(app: Path = APP) -> list[tuple[str, int, str, int]]:
    """Every function or method over ``LONG`` lines: (path, line, qualified name, length)."""
    found: list[tuple[str, int, str, int]] = []
    for path in sorted(app.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = str(path.relative_to(app.parent))
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        length = (child.end_lineno or child.lineno) - child.lineno + 1
                        if length > LONG:
                            found.append((rel, child.lineno, name, length))
                    stack.append((child, name + "."))
                else:
                    stack.append((child, prefix))
    return sorted(found)


def release_string_modules(app: Path = APP) -> list[str]:
    """The modules of ``app/`` that spell a kubelet release (see the module docstring)."""
    return [
        str(path.relative_to(app.parent))
        for path in sorted(app.rglob("*.py"))
        if release_literals(path)
    ]


def import_edges() -> int:
    """The number of (importer, imported) pairs between modules of ``app/``."""
    modules = module_names()
    return sum(len(app_imports(name, path, modules)) for name, path in modules.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list each long function and module")
    args = parser.parse_args(argv)
    functions = long_functions()
    modules = release_string_modules()
    print(f"functions over {LONG} lines in app/: {len(functions)}")
    if args.list:
        for path, line, name, length in functions:
            print(f"  {path}:{line} {name} {length}")
    print(f"modules that spell a release string: {len(modules)}")
    if args.list:
        for module in modules:
            print(f"  {module}")
    print(f"import edges in app/: {import_edges()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
