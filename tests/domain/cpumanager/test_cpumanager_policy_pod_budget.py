"""The generic pod budget rule engine (app/domain/pod/budget.py) and its two message formats."""

from __future__ import annotations

import pytest

from app.domain.pod.budget import (
    UINT64,
    BudgetContainer,
    BudgetViolation,
    check_pod_budget,
    cpu_budget_message,
    memory_budget_message,
)


def cpu(name: str, n: int = 0, sidecar: bool = False) -> BudgetContainer:
    return BudgetContainer(name, {"cpu": n} if n else {}, sidecar)


@pytest.mark.parametrize(
    ("budget", "inits", "apps", "expected"),
    [
        (4, [], [cpu("c1", 2), cpu("c2")], None),
        (4, [], [cpu("c1", 2), cpu("c2", 2)], None),
        (4, [], [cpu("c1"), cpu("c2")], None),
        (2, [cpu("i1", 1), cpu("r1", 1, True)], [cpu("c1")], None),
        (2, [cpu("r1", 2, True), cpu("i1")], [], BudgetViolation("init_shared", "cpu", "i1")),
        (2, [cpu("i1"), cpu("r1", 2, True)], [], None),
        (2, [cpu("r1", 2, True), cpu("r2", 0, True)], [], BudgetViolation("shared_pool", "cpu")),
        (
            3,
            [cpu("r1", 2, True), cpu("i1", 2)],
            [cpu("c")],
            BudgetViolation("init_exclusive", "cpu", "i1", 2, 1),
        ),
        (3, [cpu("i1", 3)], [cpu("c")], None),
        (2, [], [cpu("c1", 1), cpu("c2", 1), cpu("c3")], BudgetViolation("shared_pool", "cpu")),
        (2, [], [cpu("c1", 3), cpu("c3")], BudgetViolation("shared_pool", "cpu")),
        (2, [], [cpu("c1", 1), cpu("c2", 1)], None),
        (2, [], [cpu("c1", 5)], None),
        (0, [], [cpu("c")], BudgetViolation("shared_pool", "cpu")),
    ],
    ids=[
        "exclusive-plus-shared",
        "only-exclusive",
        "only-shared",
        "init-and-sidecar",
        "sidecar-eats-budget-before-shared-init",
        "shared-init-before-sidecar",
        "shared-sidecar-empty-pool",
        "init-larger-than-rest",
        "init-equal-to-budget",
        "sum-equals-budget",
        "sum-above-budget",
        "no-shared-container",
        "over-budget-without-shared",
        "zero-budget",
    ],
)
def test_cpu_rules(
    budget: int,
    inits: list[BudgetContainer],
    apps: list[BudgetContainer],
    expected: BudgetViolation | None,
) -> None:
    assert check_pod_budget({"cpu": budget}, inits, apps) == expected


def test_memory_types_checked_in_name_order() -> None:
    budget = {"memory": 4, "hugepages-2Mi": 4}
    apps = [
        BudgetContainer("a", {"memory": 4, "hugepages-2Mi": 4}),
        BudgetContainer("b", {}),
    ]
    v = check_pod_budget(budget, [], apps)
    assert v == BudgetViolation("shared_pool", "hugepages-2Mi")


def test_memory_regular_init_checks_every_budget_type() -> None:
    budget = {"memory": 10, "hugepages-1Gi": 2}
    inits = [
        BudgetContainer("side", {"memory": 4}, True),
        BudgetContainer("init", {"memory": 7}),
    ]
    assert check_pod_budget(budget, inits, []) == BudgetViolation(
        "init_exclusive", "memory", "init", 7, 6
    )


def test_unsigned_wraps_like_go_uint64() -> None:
    budget = {"memory": 4}
    inits = [BudgetContainer("side", {"memory": 6}, True), BudgetContainer("init", {"memory": 1})]
    # 4 - 6 wraps to 2**64 - 2 in uint64, so the init container fits.
    assert check_pod_budget(budget, inits, [], unsigned=True) is None
    assert check_pod_budget(budget, inits, [], unsigned=False) == BudgetViolation(
        "init_exclusive", "memory", "init", 1, -2
    )
    assert UINT64 == 2**64


@pytest.mark.parametrize(
    ("violation", "cpu_text", "memory_text"),
    [
        (
            BudgetViolation("init_exclusive", "memory", "i", 3, 1),
            "pod rejected, largest exclusive init container requests 3 cpus, but only 1 available",
            "pod rejected, largest exclusive init container requests 3 of memory, but only 1 "
            "available",
        ),
        (
            BudgetViolation("init_shared", "hugepages-2Mi", "i"),
            "pod rejected, pod has shared init containers but no cpus available for them",
            "pod rejected, pod has shared init containers but no hugepages-2Mi available for them",
        ),
        (
            BudgetViolation("shared_pool", "memory"),
            "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no "
            "cpus for shared containers",
            "pod rejected, sum of exclusive container memory requests equals pod budget, leaving "
            "no memory for shared containers",
        ),
    ],
    ids=["init-exclusive", "init-shared", "shared-pool"],
)
def test_messages(violation: BudgetViolation, cpu_text: str, memory_text: str) -> None:
    assert cpu_budget_message(violation) == cpu_text
    assert memory_budget_message(violation) == memory_text
