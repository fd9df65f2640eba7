"""``numascope serve``: flags over environment over defaults; uvicorn is not started."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.commands import serve


def parse(argv: list[str]) -> argparse.Namespace:
    """Only the serve command's parser (other commands' modules are not imported)."""
    parser = argparse.ArgumentParser(prog="numascope")
    serve.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    return int(args.func(args))


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    import uvicorn

    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    return calls


def test_serve_is_registered_in_the_cli() -> None:
    from app.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert args.func is serve.run
    assert (args.host, args.port, args.reload) == (None, None, False)


def test_flags_override_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMASCOPE_PORT", "9000")
    monkeypatch.setenv("NUMASCOPE_HOST", "10.0.0.1")
    args = parse(["serve", "--port", "9001", "--no-demo"])
    s = serve.build_settings(args)
    assert (s.host, s.port, s.demo) == ("10.0.0.1", 9001, False)


def test_serve_runs_uvicorn_with_the_app(
    uvicorn_calls: list[tuple[Any, dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMASCOPE_DATABASE_URL", f"sqlite:///{tmp_path / 's.db'}")
    assert main(["serve", "--host", "0.0.0.0", "--port", "8123", "--sysfs", str(tmp_path)]) == 0
    [(app, kw)] = uvicorn_calls
    assert app.state.settings.sysfs_root == tmp_path
    assert (kw["host"], kw["port"], kw["log_level"]) == ("0.0.0.0", 8123, "info")


def test_reload_uses_the_factory_and_hands_flags_over(
    uvicorn_calls: list[tuple[Any, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    # setenv first so monkeypatch restores these after the command writes them.
    monkeypatch.setenv("NUMASCOPE_PORT", "1")
    monkeypatch.setenv("NUMASCOPE_DEMO", "true")
    assert main(["serve", "--reload", "--port", "8124", "--no-demo"]) == 0
    [(target, kw)] = uvicorn_calls
    assert target == "app.web.app:make_app"
    assert kw["factory"] is True and kw["reload"] is True and kw["port"] == 8124
    assert os.environ["NUMASCOPE_PORT"] == "8124"
    assert os.environ["NUMASCOPE_DEMO"] == "false"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--database-url", "nosuch://x"], "unknown dialect", id="bad-dialect"),
        pytest.param(["--database-url", "no-scheme"], "invalid settings", id="not-a-url"),
        pytest.param(
            ["--no-simulated", "--demo"], "about simulated nodes", id="demo-without-nodes"
        ),
        pytest.param(
            ["--no-simulated", "--podresources-dir", "/tmp/x"],
            "about simulated nodes",
            id="sockets-without-nodes",
        ),
    ],
)
def test_bad_settings_exit_with_a_message(
    argv: list[str],
    message: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["serve", *argv])
    assert code in (1, 2)
    assert message in capsys.readouterr().err
    assert uvicorn_calls == []


def test_budget_flags_reach_the_settings_and_bad_values_exit_2(
    uvicorn_calls: list[tuple[Any, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(["serve", "--hint-search-budget", "0", "--cpu-time-budget", "2.5"])
    s = serve.build_settings(args)
    assert (s.hint_search_budget, s.cpu_time_budget) == (0, 2.5)
    assert main(["serve", "--cpu-time-budget", "0"]) == 2
    assert "cpu_time_budget" in capsys.readouterr().err
    assert main(["serve", "--hint-search-budget", "-1"]) == 2
    assert "hint_search_budget" in capsys.readouterr().err
    assert uvicorn_calls == []


@pytest.fixture
def python_gc() -> Iterator[tuple[int, int, int]]:
    """Python's gc thresholds as they were, put back after the test."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*before)


def test_a_serving_process_collects_cycles_less_often(
    python_gc: tuple[int, int, int],
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.web.app import SERVING_GC_THRESHOLDS, create_app

    monkeypatch.setenv("NUMASCOPE_DATABASE_URL", f"sqlite:///{tmp_path / 's.db'}")
    create_app(serve.build_settings(parse(["serve", "--no-demo"])))
    assert gc.get_threshold() == python_gc  # building an app (tests, embedders) changes nothing
    assert main(["serve", "--no-demo", "--sysfs", str(tmp_path)]) == 0
    assert gc.get_threshold() == SERVING_GC_THRESHOLDS
    gc.set_threshold(*python_gc)
    from app.web.app import make_app  # what each of --workers N imports

    make_app()
    assert gc.get_threshold() == SERVING_GC_THRESHOLDS


def test_no_simulated_serves_without_a_database(
    uvicorn_calls: list[tuple[Any, dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    monkeypatch.setenv("NUMASCOPE_DATABASE_URL", f"sqlite:///{db}")
    assert main(["serve", "--no-simulated", "--no-observe", "--state-dir", str(tmp_path)]) == 0
    [(app, _)] = uvicorn_calls
    assert app.state.settings.simulated is False
    assert app.state.engine is None and app.state.catalog.names() == []
    assert not db.exists()  # nothing migrated, nothing created
