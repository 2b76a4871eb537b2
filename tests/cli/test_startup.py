"""The cyclic garbage collector held off while a command starts (`runner.cli.startup`): each held
command lets it run again before its work, every other command at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from runner.cli import COMMANDS, main, startup
from tests.conftest import ROOT


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector as a test found it, whatever the command did to it."""
    assert gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()
        startup._held = False


def test_a_run_collects_again_before_its_first_model_call(
    collector: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runner.agent.models import ReplayChatModel

    cassette = tmp_path / "c.cassette.yaml"
    cassette.write_text(yaml.safe_dump({"agents": {"notes": [{"content": "Done."}]}}))
    seen: list[bool] = []

    def recording(call: Any) -> Any:
        def record(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(gc.isenabled())
            return call(self, *args, **kwargs)

        return record

    for name in ("_stream", "_generate"):  # (the CLI streams)
        monkeypatch.setattr(ReplayChatModel, name, recording(getattr(ReplayChatModel, name)))
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    startup.hold()  # as `main()` does for the program
    assert not gc.isenabled()
    code = main(
        [
            "run",
            str(ROOT / "agents" / "notes.yaml"),
            "hello",
            "--model",
            f"replay:{cassette}",
            "--quiet",
            "--db",
            str(tmp_path / "t.db"),
        ]
    )
    assert code == 0
    assert seen == [True]
    assert gc.get_freeze_count() > 0  # what start-up made is out of the collections' sight


def test_validate_collects_again_after_its_first_file(collector: None) -> None:
    startup.hold()
    assert main(["validate", str(ROOT / "agents" / "notes.yaml")]) == 0
    assert gc.isenabled()


def test_the_program_holds_the_collector_while_its_command_runs(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runner.cli

    monkeypatch.setattr(runner.cli, "_main", lambda argv: gc.isenabled())
    assert main() is False  # `main()` without arguments: the program


def test_other_commands_let_it_run_as_soon_as_they_are_looked_up(collector: None) -> None:
    from runner.cli import cli

    with click.Context(cli) as ctx:
        for name in sorted(COMMANDS):
            startup.hold()
            assert cli.get_command(ctx, name) is not None
            assert gc.isenabled() is (name not in startup.HELD), name
            gc.enable()


def test_main_with_arguments_leaves_the_collector_alone(collector: None) -> None:
    assert main(["validate", str(ROOT / "agents" / "notes.yaml")]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
