"""Static policy options: parsing, gates, incompatible pairs, hardware checks."""

from __future__ import annotations

import pytest

from app.domain.cpumanager.policy_options import (
    CPUManagerPolicyError,
    StaticPolicyOptions,
    new_static_policy_options,
    validate_static_policy_options,
)
from app.domain.topology.model import CPUInfo, CPUTopology

ALL_ON = {"CPUManagerPolicyAlphaOptions": True, "CPUManagerPolicyBetaOptions": True}


@pytest.mark.parametrize(
    ("options", "gates", "expected"),
    [
        ({}, None, StaticPolicyOptions()),
        ({"full-pcpus-only": "true"}, None, StaticPolicyOptions(full_physical_cpus_only=True)),
        ({"full-pcpus-only": "false"}, {}, StaticPolicyOptions()),
        (
            {"strict-cpu-reservation": "1", "distribute-cpus-across-numa": "t"},
            None,
            StaticPolicyOptions(strict_cpu_reservation=True, distribute_cpus_across_numa=True),
        ),
        (
            {"prefer-align-cpus-by-uncorecache": "True"},
            None,
            StaticPolicyOptions(prefer_align_by_uncore_cache=True),
        ),
        (
            {"align-by-socket": "true", "distribute-cpus-across-cores": "true"},
            ALL_ON,
            StaticPolicyOptions(align_by_socket=True, distribute_cpus_across_cores=True),
        ),
    ],
    ids=["empty", "stable", "false", "beta-defaults-on", "uncore", "alpha-with-gate"],
)
def test_new_static_policy_options_parses(
    options: dict[str, str], gates: dict[str, bool] | None, expected: StaticPolicyOptions
) -> None:
    assert new_static_policy_options(options, gates) == expected


@pytest.mark.parametrize(
    ("options", "gates", "message"),
    [
        ({"foo": "true"}, ALL_ON, 'unknown CPU Manager Policy option: "foo"'),
        (
            {"align-by-socket": "true"},
            None,
            'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" '
            "provided",
        ),
        (
            {"distribute-cpus-across-cores": "false"},
            {"CPUManagerPolicyAlphaOptions": False},
            "CPU Manager Policy Alpha-level Options not enabled, but option "
            '"distribute-cpus-across-cores" provided',
        ),
        (
            {"strict-cpu-reservation": "true"},
            {"CPUManagerPolicyBetaOptions": False},
            "CPU Manager Policy Beta-level Options not enabled, but option "
            '"strict-cpu-reservation" provided',
        ),
        (
            {"full-pcpus-only": "yes"},
            None,
            'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "yes": '
            "invalid syntax",
        ),
        (
            {"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"},
            ALL_ON,
            "static policy options full-pcpus-only and distribute-cpus-across-cores can not be "
            "used at the same time",
        ),
        (
            {"distribute-cpus-across-numa": "true", "distribute-cpus-across-cores": "true"},
            ALL_ON,
            "static policy options distribute-cpus-across-numa and distribute-cpus-across-cores "
            "can not be used at the same time",
        ),
        (
            {"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-cores": "1"},
            ALL_ON,
            "static policy options prefer-align-cpus-by-uncorecache and "
            "distribute-cpus-across-cores can not be used at the same time",
        ),
        (
            {"prefer-align-cpus-by-uncorecache": "true", "distribute-cpus-across-numa": "1"},
            ALL_ON,
            "static policy options prefer-align-cpus-by-uncorecache and "
            "distribute-cpus-across-numa can not be used at the same time",
        ),
        (
            {"zzz": "x", "align-by-socket": "true"},
            None,
            'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" '
            "provided",
        ),
    ],
    ids=[
        "unknown",
        "alpha-default-off",
        "alpha-explicit-off",
        "beta-off",
        "not-bool",
        "pcpus-cores",
        "numa-cores",
        "uncore-cores",
        "uncore-numa",
        "first-in-name-order",
    ],
)
def test_new_static_policy_options_errors(
    options: dict[str, str], gates: dict[str, bool] | None, message: str
) -> None:
    with pytest.raises(CPUManagerPolicyError) as err:
        new_static_policy_options(options, gates)
    assert str(err.value) == message
    assert err.value.message == message


def test_disabled_options_do_not_clash() -> None:
    opts = new_static_policy_options(
        {"full-pcpus-only": "true", "distribute-cpus-across-cores": "false"}, ALL_ON
    )
    assert opts == StaticPolicyOptions(full_physical_cpus_only=True)
    assert opts.to_option_map() == {"full-pcpus-only": "true"}


def _topo(sockets: int, numa: int) -> CPUTopology:
    """Two CPUs per socket; NUMA node = cpu % numa."""
    cpus = [CPUInfo(i, i, i // 2, i % numa, 0) for i in range(2 * sockets)]
    return CPUTopology(cpus)


@pytest.mark.parametrize(
    ("sockets", "numa", "tm_policy", "message"),
    [
        (2, 2, "best-effort", None),
        (1, 2, "restricted", None),
        (
            2,
            2,
            "single-numa-node",
            "Topolgy manager single-numa-node policy is incompatible with CPUManager "
            "align-by-socket policy option",
        ),
        (
            4,
            2,
            "none",
            "Align by socket is not compatible with hardware where number of sockets are more "
            "than number of NUMA",
        ),
    ],
    ids=["ok", "numa-per-socket", "single-numa-node", "more-sockets-than-numa"],
)
def test_validate_align_by_socket(
    sockets: int, numa: int, tm_policy: str, message: str | None
) -> None:
    opts = StaticPolicyOptions(align_by_socket=True)
    if message is None:
        validate_static_policy_options(opts, _topo(sockets, numa), tm_policy)
        return
    with pytest.raises(CPUManagerPolicyError) as err:
        validate_static_policy_options(opts, _topo(sockets, numa), tm_policy)
    assert str(err.value) == message


def test_validate_without_align_by_socket_ignores_hardware() -> None:
    validate_static_policy_options(StaticPolicyOptions(), _topo(4, 2), "single-numa-node")
