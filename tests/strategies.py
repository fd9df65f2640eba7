"""Shared hypothesis strategies: CPU sets, quantities, resource lists, containers and pods.

Import with ``from tests.strategies import cpusets, pods`` (pytest's ``pythonpath`` setting
in pyproject puts the repository root on ``sys.path``).

* ``cpu_ids(max_id)``, ``cpusets(max_id, max_size)``, ``run_cpusets(max_id)`` (a few long
  runs, like real allocations), ``cpuset_texts(max_id)`` (valid but not necessarily canonical
  text with the set it denotes);
* ``quantity_texts()`` (valid text in all three formats), ``quantities()``,
  ``cpu_quantities()``, ``memory_quantities()``;
* ``resource_lists()``, ``resource_requirements()``, ``containers()``, ``pods()`` (unique
  container names, optional sidecars and pod-level resources), ``conformance_pods()`` (the
  conformance README §2.4 dict form).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from app.domain.cpuset import CPUSet
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, Quantity

DECIMAL_SUFFIXES = ("n", "u", "m", "", "k", "M", "G", "T", "P", "E")
BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")

# -- CPU sets -------------------------------------------------------------------------


def cpu_ids(max_id: int = 1023) -> st.SearchStrategy[int]:
    return st.integers(min_value=0, max_value=max_id)


def cpusets(max_id: int = 1023, max_size: int = 64) -> st.SearchStrategy[CPUSet]:
    """Arbitrary sets of ids in ``0..max_id``."""
    return st.frozensets(cpu_ids(max_id), max_size=max_size).map(CPUSet)


@st.composite
def run_cpusets(draw: st.DrawFn, max_id: int = 1023, max_runs: int = 12) -> CPUSet:
    """Unions of a few runs (long stretches of consecutive ids, as allocations look)."""
    mask = 0
    for _ in range(draw(st.integers(0, max_runs))):
        first = draw(cpu_ids(max_id))
        last = min(max_id, first + draw(st.integers(0, 40)))
        mask |= (2 << last) - (1 << first)
    return CPUSet.from_mask(mask)


def any_cpusets(max_id: int = 1023) -> st.SearchStrategy[CPUSet]:
    return st.one_of(cpusets(max_id), run_cpusets(max_id))


@st.composite
def cpuset_texts(draw: st.DrawFn, max_id: int = 1023) -> tuple[str, frozenset[int]]:
    """(valid cpu-list text, the ids it denotes): items in any order, overlapping ranges,
    ``a-a`` ranges and duplicate ids allowed."""
    items: list[str] = []
    ids: set[int] = set()
    for _ in range(draw(st.integers(1, 12))):
        first = draw(cpu_ids(max_id))
        if draw(st.booleans()):
            items.append(str(first))
            ids.add(first)
        else:
            last = min(max_id, first + draw(st.integers(0, 30)))
            items.append(f"{first}-{last}")
            ids.update(range(first, last + 1))
    order = draw(st.permutations(items))
    return ",".join(order), frozenset(ids)


# -- quantities -----------------------------------------------------------------------


@st.composite
def quantity_texts(draw: st.DrawFn, signed: bool = False) -> str:
    """Valid quantity text in any of the three formats."""
    sign = draw(st.sampled_from(["", "-", "+"])) if signed else draw(st.sampled_from(["", "+"]))
    whole = draw(st.integers(0, 10**6))
    frac = draw(st.sampled_from(["", "", "5", "25", "125", "001", "0"]))
    number = f"{whole}.{frac}" if frac else str(whole)
    kind = draw(st.sampled_from(["dec", "bin", "exp"]))
    if kind == "dec":
        suffix = draw(st.sampled_from(DECIMAL_SUFFIXES))
    elif kind == "bin":
        suffix = draw(st.sampled_from(BINARY_SUFFIXES[:4]))
    else:
        suffix = draw(st.sampled_from(["e", "E"])) + str(draw(st.integers(-12, 12)))
    return f"{sign}{number}{suffix}"


def quantities(signed: bool = False) -> st.SearchStrategy[Quantity]:
    """Parsed quantities, plus ones built from milli and byte counts."""
    return st.one_of(
        quantity_texts(signed).map(Quantity.parse),
        st.integers(0, 10**7).map(Quantity.from_milli),
        st.builds(
            Quantity,
            st.integers(0, 2**40).map(Fraction),
            st.sampled_from([DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT]),
        ),
    )


def cpu_quantities(max_cpus: int = 64) -> st.SearchStrategy[Quantity]:
    """CPU amounts: whole CPUs as ``"n"`` or ``"n000m"``, or any millicore count."""
    return st.one_of(
        st.integers(1, max_cpus).map(lambda n: Quantity.parse(str(n))),
        st.integers(1, max_cpus).map(lambda n: Quantity.parse(f"{n}000m")),
        st.integers(1, max_cpus * 1000).map(Quantity.from_milli),
    )


def memory_quantities() -> st.SearchStrategy[Quantity]:
    return st.one_of(
        st.integers(1, 64).map(lambda n: Quantity.parse(f"{n}Gi")),
        st.integers(1, 4096).map(lambda n: Quantity.parse(f"{n}Mi")),
        st.integers(1, 64).map(lambda n: Quantity.parse(f"{n}G")),
    )


# -- resources, containers, pods ------------------------------------------------------


@st.composite
def resource_lists(draw: st.DrawFn) -> dict[str, Quantity]:
    out: dict[str, Quantity] = {}
    if draw(st.booleans()):
        out["cpu"] = draw(cpu_quantities())
    if draw(st.booleans()):
        out["memory"] = draw(memory_quantities())
    if draw(st.integers(0, 4)) == 0:
        out["hugepages-2Mi"] = Quantity.parse(f"{2 * draw(st.integers(1, 64))}Mi")
    if draw(st.integers(0, 6)) == 0:
        out["example.com/gpu"] = Quantity.parse(str(draw(st.integers(1, 4))))
    return out


@st.composite
def resource_requirements(draw: st.DrawFn, guaranteed: bool | None = None) -> ResourceRequirements:
    """Requests/limits. ``guaranteed=True``: requests == limits with cpu and memory;
    ``False``/``None``: anything with request <= limit where both are given."""
    if guaranteed:
        block = draw(resource_lists())
        block.setdefault("cpu", draw(cpu_quantities()))
        block.setdefault("memory", draw(memory_quantities()))
        return ResourceRequirements(block, block)
    limits = draw(resource_lists())
    requests = {}
    for name, lim in limits.items():
        choice = draw(st.integers(0, 2))
        if choice == 0:
            requests[name] = lim
        elif choice == 1 and lim.milli_value() > 1:
            requests[name] = Quantity.from_milli(draw(st.integers(1, lim.milli_value())))
    for name, q in draw(resource_lists()).items():
        if name not in limits:
            requests[name] = q
    return ResourceRequirements(requests, limits)


def containers(name: str, init: bool = False) -> st.SearchStrategy[Container]:
    policy = st.sampled_from([None, "Always"]) if init else st.just(None)
    return st.builds(Container, st.just(name), resource_requirements(), policy)


@st.composite
def pods(draw: st.DrawFn, pod_level: bool | None = None, max_containers: int = 4) -> Pod:
    """Pods with unique container names; ``pod_level`` forces spec.resources on or off."""
    n_app = draw(st.integers(1, max_containers))
    n_init = draw(st.integers(0, 2))
    apps = tuple(draw(containers(f"app-{i}")) for i in range(n_app))
    inits = tuple(draw(containers(f"init-{i}", init=True)) for i in range(n_init))
    want = draw(st.booleans()) if pod_level is None else pod_level
    resources = draw(resource_requirements()) if want else None
    uid = draw(st.uuids(version=4)).hex
    return Pod(uid, f"pod-{uid[:6]}", "default", apps, inits, resources)


def _container_dict(c: Container) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": c.name,
        "requests": {k: str(v) for k, v in c.resources.requests.items()},
        "limits": {k: str(v) for k, v in c.resources.limits.items()},
    }
    if c.restart_policy is not None:
        d["restart_policy"] = c.restart_policy
    return d


def pod_to_conformance(pod: Pod) -> dict[str, Any]:
    """The conformance README §2.4 form of ``pod``."""
    res = pod.resources
    return {
        "uid": pod.uid,
        "resources": None
        if res is None
        else {
            "requests": {k: str(v) for k, v in res.requests.items()},
            "limits": {k: str(v) for k, v in res.limits.items()},
        },
        "init_containers": [_container_dict(c) for c in pod.init_containers],
        "containers": [_container_dict(c) for c in pod.containers],
    }


def conformance_pods() -> st.SearchStrategy[dict[str, Any]]:
    return pods().map(pod_to_conformance)
