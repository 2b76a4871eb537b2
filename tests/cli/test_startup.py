"""The cyclic garbage collector held off while a command starts (`runner.cli.startup`): each held
command lets it run again before its work, every other command at once."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from runner.cli import COMMANDS, main, startup
from tests.conftest import ROOT, run_cli


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
        startup._program = False


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


def test_serve_collects_again_once_it_listens(
    collector: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentctl serve` holds the collector off until the port accepts connections (the engine
    has loaded the graphs by then), then freezes what start-up made: the server's runs are not
    slowed by full collections over the libraries' objects."""
    from runner.serve import ports
    from runner.serve.engines import Engine

    seen: dict[str, Any] = {}

    def listening_at_once(host: str, port: int, then: Any) -> None:
        seen["held until listening"] = not gc.isenabled()
        then()

    def serve_until_stopped(self: Engine, graphs: Any, descriptions: Any, **options: Any) -> None:
        seen["serving"] = (gc.isenabled(), gc.get_freeze_count() > 0)

    monkeypatch.setattr(ports, "when_listening", listening_at_once)
    monkeypatch.setattr(Engine, "run", serve_until_stopped)
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    startup.hold()  # as `main()` does for the program
    assert main(["serve", str(ROOT / "agents" / "notes.yaml"), "--port", "0"]) == 0
    assert seen == {"held until listening": True, "serving": (True, True)}


def test_serve_collects_again_in_the_end_if_its_port_is_never_seen_listening(
    collector: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the port never seen to accept (a firewall between the server and its own address),
    the collector would stay off for the server's life: it comes back after a while anyway."""
    import time

    import runner.cli.serve
    from runner.serve import ports
    from runner.serve.engines import Engine

    seen: list[bool] = []

    def serve_until_stopped(self: Engine, graphs: Any, descriptions: Any, **options: Any) -> None:
        deadline = time.monotonic() + 30
        while not gc.isenabled() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(gc.isenabled())

    monkeypatch.setattr(ports, "when_listening", lambda host, port, then: None)  # never
    monkeypatch.setattr(runner.cli.serve, "STARTED_AT_THE_LATEST", 0.2)
    monkeypatch.setattr(Engine, "run", serve_until_stopped)
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    startup.hold()
    assert main(["serve", str(ROOT / "agents" / "notes.yaml"), "--port", "0"]) == 0
    assert seen == [True]
    assert gc.get_freeze_count() > 0


def test_mcp_serve_collects_again_once_its_tools_are_built(
    collector: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    import anyio

    seen: list[tuple[bool, bool]] = []
    monkeypatch.setattr(
        anyio, "run", lambda *args: seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
    )
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path))
    startup.hold()
    assert main(["mcp", "serve", str(ROOT / "agents" / "notes.yaml")]) == 0
    assert seen == [(True, True)]


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


def dist_info(folder: Path, name: str, entry_points: str | None) -> Path:
    """A distribution's metadata folder in `folder`, with that `entry_points.txt` (or none)."""
    info = folder / name
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.split('-')[0]}\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


def test_a_distribution_declaring_the_pydantic_group_is_found(tmp_path: Path) -> None:
    from importlib.machinery import PathFinder

    dist_info(tmp_path / "a", "plain-1.0.dist-info", None)
    dist_info(tmp_path / "a", "tool-1.0.dist-info", "[console_scripts]\npydantic-x = tool:main\n")
    dist_info(tmp_path / "b", "Plug-2.0.EGG-INFO", "# plugins\n [pydantic] \nplug = plug:plugin\n")
    missing = str(tmp_path / "missing")
    assert not startup.declares_pydantic_plugins([str(tmp_path / "a"), missing], [PathFinder])
    assert startup.declares_pydantic_plugins([str(tmp_path / "a"), str(tmp_path / "b")], [])


def test_what_the_shortcut_cannot_read_is_left_to_pydantic(tmp_path: Path) -> None:
    from importlib.machinery import PathFinder

    archive = tmp_path / "dists.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    assert startup.declares_pydantic_plugins([str(archive)], [PathFinder])

    class OtherFinder:
        def find_distributions(self, context: object) -> list[object]:
            return []

    assert startup.declares_pydantic_plugins([], [PathFinder, OtherFinder()])
    binary = dist_info(tmp_path / "c", "odd-1.0.dist-info", None) / "entry_points.txt"
    binary.write_bytes(b"[pydantic]\xff\n")
    assert startup.declares_pydantic_plugins([str(tmp_path / "c")], [PathFinder])


def test_the_shortcut_agrees_with_importlib_metadata_here() -> None:
    import sys
    from importlib.metadata import entry_points

    declared = bool(entry_points(group="pydantic"))
    assert startup.declares_pydantic_plugins(sys.path, sys.meta_path) is declared


def test_pydantic_is_told_it_has_no_plugins_only_when_none_is_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from pydantic.plugin import _loader

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(_loader, "_plugins", None)
    startup.skip_empty_plugin_scan()
    assert _loader._plugins == {}
    dist_info(tmp_path, "plug-1.0.dist-info", "[pydantic]\nplug = plug:plugin\n")
    monkeypatch.setattr(_loader, "_plugins", None)
    startup.skip_empty_plugin_scan()
    assert _loader._plugins is None  # pydantic's own scan finds and loads it


def test_a_pydantic_plugin_still_sees_validate_build_the_spec(tmp_path: Path) -> None:
    dist_info(tmp_path, "seeschemas-1.0.dist-info", "[pydantic]\nsee = seeschemas:plugin\n")
    (tmp_path / "seeschemas.py").write_text(
        "import sys\n"
        "class Plugin:\n"
        "    def new_schema_validator(self, schema, schema_type, path, kind, config, settings):\n"
        "        sys.stderr.write(f'plugin saw {path.name}\\n')\n"
        "        return None, None, None\n"
        "plugin = Plugin()\n"
    )
    done = run_cli(
        "validate",
        str(ROOT / "agents" / "notes.yaml"),
        env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        process=True,
    )
    assert done.returncode == 0, done.stderr
    assert "plugin saw AgentSpec" in done.stderr.splitlines()


def test_the_program_does_not_import_pydantics_plugin_loader_when_none_is_declared(
    tmp_path: Path,
) -> None:
    """`agentctl validate` as a program: pydantic's validators are built with the stand-in loader
    (no `importlib.metadata`, no scan), and the file is still checked: a bad one fails."""

    seen = (
        "type(sys.modules['pydantic.plugin._loader']).__name__, 'importlib.metadata' in sys.modules"
    )
    good = validate_seen_at_exit(seen, ROOT / "agents" / "notes.yaml")
    assert good.returncode == 0, good.stderr
    assert good.stderr.splitlines()[-1] == "_NoPlugins False"
    with_typo = tmp_path / "notes.yaml"
    with_typo.write_text((ROOT / "agents" / "notes.yaml").read_text().replace("model:", "modle:"))
    failed = validate_seen_at_exit(seen, with_typo)
    assert failed.returncode != 0
    assert "modle: unknown key; did you mean 'model'?" in failed.stderr
    assert failed.stderr.splitlines()[-1] == "_NoPlugins False"


def test_pydantic_asks_its_plugin_loader_for_get_plugins_only() -> None:
    """The stand-in answers `get_plugins()` alone: every use of the loader in the installed
    pydantic must be that one (an upgrade that uses more fails here, not in a user's run)."""
    import re

    import pydantic

    package = Path(pydantic.__file__).parent
    uses = [
        (path.relative_to(package).as_posix(), line.strip())
        for path in package.rglob("*.py")
        if path.name != "_loader.py"
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"\b_loader\b", line)
    ]
    assert uses == [("plugin/_schema_validator.py", "from ._loader import get_plugins")]


def program(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -c SCRIPT ARGS` in the source tree."""
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT
    )


def validate_seen_at_exit(
    seen: str, path: Path, *, before: str = ""
) -> subprocess.CompletedProcess[str]:
    """`agentctl validate PATH` as the program (`runner.program.main`), printing the Python
    expression `seen` to stderr from an exit handler: `validate` ends the process itself, so
    code after `main()` never runs. `before` runs first (`atexit`, `gc` and `sys` imported)."""
    script = (
        "import atexit, gc, sys\n"
        f"{before}"
        f"atexit.register(lambda: print({seen}, file=sys.stderr))\n"
        "sys.argv = ['agentctl', 'validate', sys.argv[1]]\n"
        "from runner.program import main\n"
        "sys.exit(main())\n"
    )
    return program(script, str(path))


# Garbage whose finalizer says whether the interpreter tore the modules down: a reference cycle
# an exit handler leaves, which the teardown's last collection finds (the program freezes what
# exists before it, and frozen objects are not finalized at exit).
TORN_DOWN = (
    "import atexit, os, sys\n"
    "class Witness:\n"
    "    def __del__(self, write=os.write):\n"
    "        write(2, b'torn down\\n')\n"
    "def leave_a_cycle():\n"
    "    witness = Witness()\n"
    "    witness.cycle = witness\n"
    "atexit.register(leave_a_cycle)\n"
    "from runner.cli import main\n"
    "sys.argv = ['agentctl', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def test_validate_ends_the_program_without_the_teardown(tmp_path: Path) -> None:
    ok = program(TORN_DOWN, "validate", str(ROOT / "agents" / "notes.yaml"))
    assert (ok.returncode, ok.stdout) == (0, "ok: agents/notes.yaml\n"), ok.stderr
    assert "torn down" not in ok.stderr
    # another command exits as Python does
    version = program(TORN_DOWN, "--version")
    assert version.returncode == 0 and "agentctl" in version.stdout
    assert "torn down" in version.stderr


def test_validate_ending_itself_keeps_its_exit_code_and_all_its_output(tmp_path: Path) -> None:
    """Many problems, printed to a file (block-buffered, unlike a terminal): every line is
    there, and the status is the command's."""
    for index in range(60):
        (tmp_path / f"a{index:02}.yaml").write_text(
            f"name: a{index}\nprompt: hi\nmodle: x\ntemprature: 1\n"
        )
    out = tmp_path / "out.jsonl"
    with out.open("w") as file:
        done = subprocess.run(
            [sys.executable, "-m", "runner", "validate", "--json", str(tmp_path)],
            stdout=file,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
    assert done.returncode == 2, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 120
    assert all(json.loads(line)["file"] for line in lines)


def test_a_thread_still_running_is_waited_for_as_python_would() -> None:
    """(The thread lives until the main thread is done: Python's exit waits for it, then.)"""
    script = (
        "import sys, threading\n"
        "def after_main():\n"
        "    threading.main_thread().join()\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=after_main).start()\n" + TORN_DOWN
    )
    done = program(script, "validate", str(ROOT / "agents" / "notes.yaml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "thread done"
    assert "torn down" in done.stderr


def test_a_status_that_is_not_a_number_is_printed_and_exits_1() -> None:
    from runner.cli import startup

    script = (
        "import sys\n"
        "from runner.cli import startup\n"
        "startup.as_program(); startup.command_found('validate')\n"
        "startup.finish('it went wrong')\n"
        "print('not reached')\n"
    )
    done = program(script)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "it went wrong\n")
    assert "validate" in startup.ENDS_ITSELF


@pytest.mark.parametrize("process", [False, True], ids=["main(argv)", "program"])
def test_the_librarys_warnings_are_printed_as_warning_lines(tmp_path: Path, process: bool) -> None:
    """`main(argv)` sets the warnings logger up at once; the program when `logging` is first
    imported (by LangChain, here), which `validate` never does."""
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: remembers\nprompt: hi\nmodel: replay:c.cassette.yaml\n"
        "memory: [./no/such/folder/AGENTS.md]\n"
    )
    (tmp_path / "c.cassette.yaml").write_text(
        yaml.safe_dump({"agents": {"remembers": [{"content": "Done."}]}})
    )
    done = run_cli(
        "run",
        str(agent),
        "hello",
        "--quiet",
        "--db",
        str(tmp_path / "t.db"),
        cwd=tmp_path,
        process=process,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: memory file" in done.stderr
    assert "folder/AGENTS.md is in a folder that does not exist; skipped" in done.stderr


def test_validate_as_the_program_does_not_import_logging() -> None:
    done = validate_seen_at_exit("'logging' in sys.modules", ROOT / "agents" / "notes.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "False"


def test_when_imported_calls_back_once_the_module_has_run(tmp_path: Path) -> None:
    (tmp_path / "late_module.py").write_text("VALUE = 42\n")
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from runner.cli import startup\n"
        "seen = []\n"
        "startup.when_imported('late_module', lambda m: seen.append(m.VALUE))\n"
        "import json  # another import passes the finder by\n"
        "assert seen == []\n"
        "import late_module\n"
        "startup.when_imported('late_module', lambda m: seen.append(-m.VALUE))  # imported: now\n"
        "print(seen, any(type(f).__name__ == '_WhenImported' for f in sys.meta_path))\n"
    )
    done = program(script)
    assert done.stdout.strip() == "[42, -42] False", done.stderr


def test_the_program_holds_the_collector_from_before_the_cli_is_imported() -> None:
    """`runner.program.main` (the console script): off while click is imported, on again once
    `validate` has built its validators."""
    spy = (
        "seen = {}\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        seen.setdefault(name, gc.isenabled())\n"
        "sys.meta_path.insert(0, Spy())\n"
    )
    done = validate_seen_at_exit(
        "seen['click'], gc.isenabled()", ROOT / "agents" / "notes.yaml", before=spy
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "False True"
