"""`execute` on the local shell: timeout and process group, output cap, clean environment."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from runner.backends import BackendError, ExecuteResult, LocalShellBackend
from runner.backends.local_shell import ENV_ALLOWLIST
from runner.backends.sandbox import bubblewrap_problem


@pytest.fixture(params=["bubblewrap", "none"])
def shell(tmp_path: Path, request: pytest.FixtureRequest) -> LocalShellBackend:
    """The backend with each sandbox this machine has (`test_sandbox.py` attacks the sandbox;
    here both must behave alike)."""
    if request.param == "bubblewrap" and (problem := bubblewrap_problem()) is not None:
        pytest.skip(f"bubblewrap cannot sandbox here: {problem}")
    return LocalShellBackend(tmp_path / "root", timeout=10, sandbox=request.param)


def run(backend: LocalShellBackend, mode: str, command: str, **kwargs: float) -> ExecuteResult:
    if mode == "sync":
        return backend.execute(command, **kwargs)
    return asyncio.run(backend.aexecute(command, **kwargs))


def live_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that still run (zombies waiting for a reaper do not count)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(entry))
    return members


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_timeout_kills_the_whole_process_group(tmp_path: Path, mode: str) -> None:
    # Without a sandbox the process group is what gets killed (with one, the PID namespace:
    # test_sandbox.py::test_the_timeout_kills_the_whole_tree).
    shell = LocalShellBackend(tmp_path / "root", sandbox="none")
    command = "cut -d' ' -f5 /proc/self/stat; sleep 30 & sleep 30; echo never"
    started = time.monotonic()
    result = run(shell, mode, command, timeout=0.5)
    assert time.monotonic() - started < 5
    pgid_line, notice = result.output.split("\n")
    assert notice == (
        "[Command timed out after 0.5 seconds; it was killed together with every process it "
        "started]"
    )
    assert result.exit_code is None
    assert not result.truncated
    pgid = int(pgid_line)
    deadline = time.monotonic() + 5
    while live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_members(pgid) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_megabyte_of_output_is_truncated_and_flagged(shell: LocalShellBackend, mode: str) -> None:
    result = run(shell, mode, "head -c 1048576 /dev/zero | tr '\\0' x; echo done >&2")
    assert result.exit_code == 0
    assert result.truncated
    assert result.output == (
        "x" * 50_000 + "\n... [948,581 bytes of output not shown] ...\n" + "x" * 49_995 + "done\n"
    )
    assert result.full_output == "x" * 1_048_576 + "done\n"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_long_output_keeps_its_head_and_tail_at_whole_lines(tmp_path: Path, mode: str) -> None:
    """The end of a long log is usually what matters: it is shown, and kept whole to be saved."""
    backend = LocalShellBackend(tmp_path, max_output_bytes=1000, max_saved_output_bytes=200_000)
    result = run(backend, mode, "seq 1 30000")
    head, rest = result.output.split("\n... [")
    note, tail = rest.split("...\n")
    assert head.splitlines() == [str(n) for n in range(1, len(head.splitlines()) + 1)]
    assert tail.splitlines()[-1] == "30000"
    assert tail.splitlines() == [str(n) for n in range(30001 - len(tail.splitlines()), 30001)]
    assert note.endswith("bytes of output not shown] ")
    assert result.full_output == "".join(f"{n}\n" for n in range(1, 30001))


def test_output_over_the_saved_cap_keeps_its_head_and_tail_too(tmp_path: Path) -> None:
    backend = LocalShellBackend(tmp_path, max_output_bytes=100, max_saved_output_bytes=10_000)
    result = backend.execute("seq 1 30000")
    assert result.full_output is not None and len(result.full_output) < 10_100
    assert result.full_output.startswith("1\n2\n3\n")
    assert result.full_output.endswith("29999\n30000\n")
    assert "bytes of output not shown" in result.full_output


def test_truncation_never_splits_a_character(tmp_path: Path) -> None:
    backend = LocalShellBackend(tmp_path, max_output_bytes=5)
    result = backend.execute("printf 'ééé'")
    assert (result.output, result.truncated) == (
        "é\n... [2 bytes of output not shown] ...\né",
        True,
    )
    assert result.full_output == "ééé"
    assert backend.execute("printf 'éé'").output == "éé"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_output_merges_stdout_and_stderr_and_reports_exit_codes(
    shell: LocalShellBackend, mode: str
) -> None:
    result = run(shell, mode, "echo out; echo err >&2; echo out2; exit 3")
    assert (result.output, result.exit_code, result.truncated) == ("out\nerr\nout2\n", 3, False)
    assert run(shell, mode, "kill -9 $$").exit_code == 137
    assert run(shell, mode, "pwd").output.strip() == shell.root


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_environment_is_clean_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-must-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("LANG", "C.UTF-8")
    backend = LocalShellBackend(tmp_path, env={"PROJECT_FLAG": "on"})
    output = run(backend, mode, "env").output
    seen = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    assert "OPENAI_API_KEY" not in seen
    assert "sk-fake" not in output and "sk-ant" not in output
    assert seen["PROJECT_FLAG"] == "on"
    assert seen["LANG"] == "C.UTF-8"
    set_by_the_shell = {"PWD", "SHLVL", "_", "OLDPWD"}
    assert set(seen) <= {*ENV_ALLOWLIST, "PROJECT_FLAG", *set_by_the_shell}
    leaked = {name for name in os.environ if name not in ENV_ALLOWLIST} & set(seen)
    assert leaked <= set_by_the_shell


def test_inherit_env_passes_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-inherited")
    backend = LocalShellBackend(tmp_path, inherit_env=True, env={"EXTRA": "1"})
    output = backend.execute("echo $OPENAI_API_KEY $EXTRA").output
    assert output == "sk-fake-inherited 1\n"


def test_a_bad_timeout_is_refused(shell: LocalShellBackend) -> None:
    with pytest.raises(BackendError) as caught:
        shell.execute("true", timeout=0)
    assert str(caught.value) == "timeout must be a positive number of seconds, got 0"


def test_async_commands_do_not_block_the_event_loop(shell: LocalShellBackend) -> None:
    # Each command signs in, then waits (up to 20 s) until all three have: they succeed only if
    # they run at the same time, which they cannot if one of them blocks the event loop.
    command = (
        "touch meet.$1; "
        "for i in $(seq 400); do [ $(ls meet.* | wc -l) -ge 3 ] && exit 0; sleep 0.05; done; "
        "exit 1"
    )

    async def scenario() -> list[ExecuteResult]:
        return await asyncio.gather(*(shell.aexecute(f"set -- {i}; {command}") for i in range(3)))

    results = asyncio.run(scenario())
    assert [(r.exit_code, r.output) for r in results] == [(0, "")] * 3


def test_file_tools_still_work_and_stay_confined(shell: LocalShellBackend) -> None:
    shell.execute("mkdir -p made && echo 'by the shell' > made/f.txt")
    assert shell.read("/made/f.txt").content == "by the shell"
    shell.write("/for_shell.txt", "from the agent\n")
    assert shell.execute("cat for_shell.txt").output == "from the agent\n"


def test_a_timeout_over_the_maximum_is_cut_to_it(tmp_path: Path) -> None:
    shell = LocalShellBackend(tmp_path / "root", timeout=10, max_timeout=0.3)
    assert shell.max_timeout == 10  # never below the default
    shell = LocalShellBackend(tmp_path / "root", timeout=0.2, max_timeout=0.3)
    result = shell.execute("sleep 5", timeout=1000)
    assert result.exit_code is None
    assert result.output.endswith(
        "[Command timed out after 0.3 seconds; it was killed together "
        "with every process it started]"
    )
