"""Commands that try to break out of `execute`'s sandbox, one threat per test.

Each threat is tried on the backend, sync and async, with bubblewrap. Where the threat works
without a sandbox, the same command is also run with `sandbox: none` to show that the test can
fail: what stops it is the sandbox. `test_sandbox_runs.py` makes the same attempts through
`agentctl run` and the Python API.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.backends import BackendError, ExecuteResult, LocalShellBackend
from runner.backends import sandbox as sandbox_module
from runner.backends.sandbox import bubblewrap_command, bubblewrap_problem

MODES = ("sync", "async")
NO_BUBBLEWRAP = bubblewrap_problem()
needs_bubblewrap = pytest.mark.skipif(
    NO_BUBBLEWRAP is not None,
    reason=f"bubblewrap cannot sandbox here ({NO_BUBBLEWRAP}); scripts/setup installs it as root",
)


def run(backend: LocalShellBackend, mode: str, command: str, **kwargs: float) -> ExecuteResult:
    if mode == "sync":
        return backend.execute(command, **kwargs)
    return asyncio.run(backend.aexecute(command, **kwargs))


def running(token: str) -> list[str]:
    """Command lines of live host processes that mention `token` (zombies do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmdline and state not in ("Z", "X"):
            found.append(cmdline)
    return found


def unique_seconds() -> str:
    """A `sleep` duration no other process on the machine uses, to find its process by."""
    return f"{900 + uuid.uuid4().int % 10**6 / 10**6:.6f}"


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A folder outside the root that is not under /tmp either (so the sandbox shows it,
    read-only, instead of hiding it under its private /tmp), holding `victim.txt`."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    folder = Path(os.path.realpath(base)) / f"agentctl-outside-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "victim.txt").write_text("untouched\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def jail(tmp_path: Path) -> LocalShellBackend:
    return LocalShellBackend(tmp_path / "root", sandbox="bubblewrap", timeout=30)


@pytest.fixture
def open_host(tmp_path: Path) -> LocalShellBackend:
    return LocalShellBackend(tmp_path / "root", sandbox="none", timeout=30)


# ------------------------------------------------------------------------- the file system


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_cannot_write_outside_the_root(
    jail: LocalShellBackend, outside: Path, tmp_path: Path, mode: str
) -> None:
    sibling = tmp_path / "sibling.txt"
    sibling.write_text("untouched\n")
    victim = outside / "victim.txt"
    refused = [  # the host's file system is there, read-only
        f"echo pwned > {victim}",
        f"echo pwned >> {victim}",
        f"rm -f {victim}",
        f"mv {victim} {jail.root}/stolen.txt",
        f"touch {outside}/new.txt",
        f"echo pwned > {Path.home()}/agentctl-pwned.txt",
        "echo pwned > /etc/agentctl-pwned",
    ]
    for command in refused:
        result = run(jail, mode, command)
        assert result.exit_code != 0, (command, result)
        assert "Read-only file system" in result.output, (command, result)
    # the root's neighbours under /tmp are out of sight: a write lands in the private /tmp
    for command in (f"echo pwned > {sibling}", "echo pwned > ../sibling.txt"):
        run(jail, mode, command)
    assert victim.read_text() == "untouched\n"
    assert sibling.read_text() == "untouched\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert not (Path.home() / "agentctl-pwned.txt").exists()
    assert not Path("/etc/agentctl-pwned").exists()
    # the root itself is writable, from the shell and for the file tools
    assert run(jail, mode, "mkdir -p d && echo mine > d/f.txt && cat d/f.txt").output == "mine\n"
    assert jail.read("/d/f.txt").content == "mine"


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_cannot_hard_link_a_file_from_outside(
    jail: LocalShellBackend, open_host: LocalShellBackend, outside: Path, mode: str
) -> None:
    victim = outside / "victim.txt"
    result = run(jail, mode, f"ln {victim} linked.txt")
    assert result.exit_code != 0
    assert "cross-device" in result.output  # EXDEV: the root is a mount of its own
    assert not Path(jail.root, "linked.txt").exists()
    assert os.stat(victim).st_nlink == 1
    # a hard link inside the root still works
    assert run(jail, mode, "echo a > a.txt && ln a.txt b.txt && cat b.txt").output == "a\n"
    # without the sandbox the link is made, and the file tools would reach the file through it
    assert run(open_host, mode, f"ln {victim} linked.txt").exit_code == 0
    assert os.stat(victim).st_nlink == 2


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_tmp_is_private(jail: LocalShellBackend, mode: str) -> None:
    host_file = Path("/tmp") / f"agentctl-host-{uuid.uuid4().hex}"
    host_file.write_text("host secret\n")
    left = Path("/tmp") / f"agentctl-left-{uuid.uuid4().hex}"
    try:
        result = run(jail, mode, f"cat {host_file}; echo by-the-command > {left}; cat {left}")
        assert "host secret" not in result.output
        assert result.output.endswith("by-the-command\n")
        assert not left.exists()
        # and nothing a command leaves in /tmp is there for the next one
        assert run(jail, mode, f"cat {left}").exit_code != 0
    finally:
        host_file.unlink()


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_system_programs_still_work(jail: LocalShellBackend, mode: str) -> None:
    python = os.path.realpath(sys.executable)
    result = run(jail, mode, f"{python} -c 'print(6 * 7)' && git init -q . && git status --short")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("42\n")
    assert Path(jail.root, ".git").is_dir()


# ------------------------------------------------------------------------- agentctl itself


SECRET = "sk-test-agentctl-parent-secret-0123456789"

PEEK = (
    "cat /proc/$PPID/environ /proc/1/environ; "
    "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; done; "
    "ps -ef 2>/dev/null; true"
)


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_cannot_read_the_parents_environment(tmp_path: Path, mode: str, sandbox: str) -> None:
    # /proc/PID/environ shows a process's environment as it started, so the secret must be in
    # the environment of a fresh process that runs the backend (as with `agentctl run`).
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from runner.backends import LocalShellBackend
        backend = LocalShellBackend({str(tmp_path / "root")!r}, sandbox={sandbox!r})
        command = {PEEK!r}
        if {mode!r} == "sync":
            result = backend.execute(command)
        else:
            result = asyncio.run(backend.aexecute(command))
        sys.stdout.write(result.output)
        """
    )
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    if sandbox == "bubblewrap":
        assert SECRET not in done.stdout
        assert "import asyncio" not in done.stdout  # the parent's command line is not in sight
    else:  # the hole the sandbox closes
        assert SECRET in done.stdout


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_agentctls_process_is_not_visible(jail: LocalShellBackend, mode: str) -> None:
    result = run(jail, mode, f"ls -d /proc/{os.getpid()} /proc/{os.getppid()}; ls /proc")
    assert f"/proc/{os.getpid()}\n" not in result.output
    pids = sorted(int(name) for name in result.output.split() if name.isdigit())
    assert pids and max(pids) < 100  # a fresh PID namespace: only the command's own processes


# ------------------------------------------------------------------------- the network


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's 127.0.0.1; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def connect_command(port: int) -> str:
    python = os.path.realpath(sys.executable)
    code = (
        "import socket; "
        f"socket.create_connection(('127.0.0.1', {port}), timeout=5).close(); "
        "print('connected')"
    )
    return f'{python} -c "{code}"'


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_cannot_reach_the_network(
    jail: LocalShellBackend, open_host: LocalShellBackend, listener: int, mode: str
) -> None:
    result = run(jail, mode, connect_command(listener))
    assert result.exit_code != 0
    # Python 3.13's traceback quotes the source line, print('connected') included.
    assert "connected\n" not in result.output.replace("print('connected')", "")
    assert "Connection refused" in result.output  # its own loopback, where nobody listens
    assert run(open_host, mode, connect_command(listener)).output == "connected\n"


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_network_true_lets_commands_connect(tmp_path: Path, listener: int, mode: str) -> None:
    backend = LocalShellBackend(tmp_path / "root", sandbox="bubblewrap", network=True)
    assert run(backend, mode, connect_command(listener)).output == "connected\n"


# ------------------------------------------------------------------------- processes


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_a_background_process_is_gone_after_the_call(
    tmp_path: Path, mode: str, sandbox: str
) -> None:
    backend = LocalShellBackend(tmp_path / "root", sandbox=sandbox)  # type: ignore[arg-type]
    quiet, holding = unique_seconds(), unique_seconds()
    # the second one keeps the output pipe open: the call still ends when the shell does
    result = run(backend, mode, f"sleep {quiet} >/dev/null 2>&1 & sleep {holding} & echo started")
    assert (result.output, result.exit_code) == ("started\n", 0)
    wait_until_gone(quiet)
    wait_until_gone(holding)


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_the_timeout_kills_the_whole_tree(tmp_path: Path, mode: str, sandbox: str) -> None:
    backend = LocalShellBackend(tmp_path / "root", sandbox=sandbox)  # type: ignore[arg-type]
    child, grandchild, waited = unique_seconds(), unique_seconds(), unique_seconds()
    command = f"sleep {child} & sh -c 'sleep {grandchild} & wait' & echo up; sleep {waited}"
    result = run(backend, mode, command, timeout=1)
    assert result.exit_code is None
    assert result.output.startswith("up\n[Command timed out after 1 second;")
    for token in (child, grandchild, waited):
        wait_until_gone(token)


@needs_bubblewrap
@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_yes_returns_capped_at_its_timeout_every_time(tmp_path: Path, sandbox: str) -> None:
    """`yes` floods the pipe; the async path once never returned (its reader was cancelled
    while paused, and asyncio's wait() waited for that pipe's end)."""
    backend = LocalShellBackend(
        tmp_path / "root",
        sandbox=sandbox,  # type: ignore[arg-type]
        max_output_bytes=1000,
    )

    async def async_yes() -> ExecuteResult:
        # a hang fails here instead of stalling the suite
        return await asyncio.wait_for(backend.aexecute("yes", timeout=0.05), 60)

    for _ in range(50):
        for result in (backend.execute("yes", timeout=0.05), asyncio.run(async_yes())):
            assert result.exit_code is None
            kept, _ = result.output.rsplit("[Command timed out", 1)
            head, _, tail = kept.partition("\n... [")
            tail = tail.partition("...\n")[2]
            assert len(head.encode()) + len(tail.rstrip("\n").encode()) <= 1000
            assert set(head + tail) <= {"y", "\n"}


def wait_until_gone(token: str) -> None:
    """Processes killed with SIGKILL need a moment to disappear without a sandbox."""
    for _ in range(200):
        if not running(token):
            return
        time.sleep(0.025)
    assert running(token) == []


# ------------------------------------------------------------------------- the settings


@needs_bubblewrap
@pytest.mark.parametrize("mode", MODES)
def test_writable_and_read_only_paths(tmp_path: Path, outside: Path, mode: str) -> None:
    root = tmp_path / "root"
    (root / "protected").mkdir(parents=True)
    shown = tmp_path / "shown"  # under /tmp: hidden unless named
    shown.mkdir()
    (shown / "data.txt").write_text("data\n")
    backend = LocalShellBackend(
        root,
        sandbox="bubblewrap",
        writable_paths=[outside],
        read_only_paths=[root / "protected", shown],
    )
    result = run(backend, mode, f"echo more >> {outside}/victim.txt && cat {shown}/data.txt")
    assert (result.output, result.exit_code) == ("data\n", 0)
    assert (outside / "victim.txt").read_text() == "untouched\nmore\n"
    for command in ("touch protected/x", f"touch {shown}/x"):
        assert run(backend, mode, command).exit_code != 0
    assert list((root / "protected").iterdir()) == []


def test_the_command_line_is_the_documented_one(tmp_path: Path) -> None:
    line = bubblewrap_command(
        "/usr/bin/bwrap",
        ["/bin/sh", "-c", "true"],
        root="/tmp/x/root",
        read_only_paths=["/tmp/x/root/.git", "/opt/data"],
        writable_paths=["/srv/cache"],
    )
    assert line[:2] == ["/usr/bin/bwrap", "--unshare-all"]
    assert "--share-net" not in line
    for flag in ("--die-with-parent", "--new-session"):
        assert flag in line
    assert line[line.index("--cap-drop") + 1] == "ALL"
    binds = [(line[i], line[i + 1]) for i, arg in enumerate(line) if "bind" in arg]
    # parents before children, so nothing later covers the root or a protected part of it
    assert binds == [
        ("--ro-bind", "/"),
        ("--ro-bind", "/opt/data"),
        ("--bind", "/srv/cache"),
        ("--bind", "/tmp/x/root"),
        ("--ro-bind", "/tmp/x/root/.git"),
    ]
    assert line[-6:] == ["--chdir", "/tmp/x/root", "--", "/bin/sh", "-c", "true"]


# ------------------------------------------------------------------------- no bubblewrap


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process sees a machine without `bwrap`."""
    monkeypatch.setattr(sandbox_module, "find_bubblewrap", lambda: None)
    sandbox_module.bubblewrap_problem.cache_clear()
    yield
    sandbox_module.bubblewrap_problem.cache_clear()


@pytest.mark.usefixtures("no_bubblewrap")
def test_auto_without_bubblewrap_runs_unsandboxed_and_says_why(tmp_path: Path) -> None:
    backend = LocalShellBackend(tmp_path / "root")
    assert backend.sandbox == "none"
    assert backend.unsandboxed_because is not None
    assert "`bwrap` not found on PATH" in backend.unsandboxed_because
    assert backend.execute("echo still runs").output == "still runs\n"


@pytest.mark.usefixtures("no_bubblewrap")
def test_bubblewrap_required_without_it_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError) as caught:
        LocalShellBackend(tmp_path / "root", sandbox="bubblewrap")
    assert str(caught.value).startswith("sandbox: bubblewrap is not available: `bwrap` not found")


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_a_cancelled_async_call_leaves_nothing_running(tmp_path: Path, sandbox: str) -> None:
    if sandbox == "bubblewrap" and NO_BUBBLEWRAP is not None:
        pytest.skip(f"bubblewrap cannot sandbox here: {NO_BUBBLEWRAP}")
    backend = LocalShellBackend(tmp_path / "root", sandbox=sandbox)  # type: ignore[arg-type]
    token = unique_seconds()

    async def cancel_midway() -> None:
        call = asyncio.ensure_future(backend.aexecute(f"touch started; sleep {token}"))
        for _ in range(3000):  # until the command runs (at most 30 s)
            if Path(backend.root, "started").exists():
                break
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancel_midway())
    wait_until_gone(token)
