"""The layer contract (DESIGN.md §1): data flows adapters → domain → services → web.

- the domain imports only the standard library, ``app.domain`` and ``DOMAIN_LIBRARIES``;
- contracts import only pydantic, the standard library and ``app.domain``;
- adapters never import services or web; services never import web;
- routers never import each other.
"""

from __future__ import annotations

import sys

import pytest

from tests.import_graph import imported_names, module_names

MODULES = module_names()
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
# Pure computation without I/O the domain may call, each by its exact module name: fnv_c hashes
# the checkpoints' FNV-1a checksums in C (issue 20 point 8).
DOMAIN_LIBRARIES = frozenset({"fnv_c"})


def _imports_of(prefix: str) -> dict[str, set[str]]:
    return {
        name: imported_names(name, path, MODULES)
        for name, path in MODULES.items()
        if name == prefix or name.startswith(prefix + ".")
    }


def _top(name: str) -> str:
    return name.split(".")[0]


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _breaches(prefix: str, allowed: object) -> list[str]:
    out = []
    for module, names in sorted(_imports_of(prefix).items()):
        for imported in sorted(names):
            if not allowed(imported):  # type: ignore[operator]
                out.append(f"{module} imports {imported}")
    return out


def domain_allowed(name: str) -> bool:
    return _top(name) in STDLIB or _under(name, "app.domain") or name in DOMAIN_LIBRARIES


def contracts_allowed(name: str) -> bool:
    return (
        domain_allowed(name)
        or _top(name) in {"pydantic", "pydantic_core"}
        or _under(name, "app.contracts")
    )


def adapters_allowed(name: str) -> bool:
    return not _under(name, "app.services", "app.web", "app.commands", "app.cli")


def services_allowed(name: str) -> bool:
    return not _under(name, "app.web", "app.commands", "app.cli")


def test_domain_imports_only_the_standard_library_itself_and_its_libraries() -> None:
    assert "app.domain.releases" in MODULES
    assert _breaches("app.domain", domain_allowed) == []


def test_contracts_import_only_pydantic_and_the_domain() -> None:
    assert _breaches("app.contracts", contracts_allowed) == []


def test_adapters_never_import_services_or_web() -> None:
    assert _breaches("app.adapters", adapters_allowed) == []


def test_services_never_import_web() -> None:
    assert _breaches("app.services", services_allowed) == []


def test_routers_never_import_each_other() -> None:
    routers = "app.web.routers"
    found = []
    for module, names in sorted(_imports_of(routers).items()):
        if module == routers:
            continue
        for imported in sorted(names):
            if _under(imported, routers) and imported != routers and imported != module:
                found.append(f"{module} imports {imported}")
    assert found == []


@pytest.mark.parametrize(
    ("rule", "name", "ok"),
    [
        (domain_allowed, "json", True),
        (domain_allowed, "app.domain.cpuset", True),
        (domain_allowed, "pydantic", False),
        (domain_allowed, "fnv_c", True),
        (domain_allowed, "fnv_c.ext", False),
        (domain_allowed, "yaml", False),
        (domain_allowed, "app.services.nodes", False),
        (contracts_allowed, "pydantic", True),
        (contracts_allowed, "fastapi", False),
        (adapters_allowed, "app.services.nrt", False),
        (adapters_allowed, "app.domain.node.model", True),
        (services_allowed, "app.web.errors", False),
        (services_allowed, "app.adapters.kubelet", True),
    ],
)
def test_the_rules_can_fail(rule: object, name: str, ok: bool) -> None:
    assert rule(name) is ok  # type: ignore[operator]
