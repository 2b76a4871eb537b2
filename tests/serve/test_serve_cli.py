"""`agentctl serve` refusing to start: every case exits non-zero with a clear message and no
traceback, before any server starts."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

needs_aegra = pytest.mark.skipif(
    sys.version_info < (3, 12) or importlib.util.find_spec("aegra_api") is None,
    reason="Aegra (serve --db) needs Python 3.12 or newer and the serve extra",
)


def _closed_port() -> int:
    """A port nothing listens on (taken free, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


GOOD = "name: {name}\ndescription: d\nmodel: replay:c.cassette.yaml\nprompt: p\n"


def _folder(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "c.cassette.yaml").write_text("- content: hi\n", encoding="utf-8")
    (tmp_path / "a.yaml").write_text(GOOD.format(name="alpha") + extra, encoding="utf-8")
    return tmp_path


def test_problems_in_agent_files_are_located_and_nothing_starts(tmp_path: Path) -> None:
    _folder(tmp_path, "tols: []\n")
    done = run_cli("serve", ".", "--port", "0", cwd=tmp_path, env={"DATABASE_URL": ""})
    assert done.returncode == 2
    assert done.stderr == "a.yaml:5:1: tols: unknown key; did you mean 'tools'?\n"
    assert not (tmp_path / ".langgraph_api").exists()


def test_a_database_url_that_is_not_postgres_is_refused(tmp_path: Path) -> None:
    _folder(tmp_path)
    done = run_cli("serve", ".", "--db", "sqlite:///threads.db", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "error: --db: expected a postgresql:// URL (Aegra runs on PostgreSQL), found "
        "'sqlite:///threads.db'\n"
    )


@needs_aegra
def test_a_database_that_does_not_answer_is_refused_without_its_password(tmp_path: Path) -> None:
    _folder(tmp_path)
    port = _closed_port()
    url = f"postgresql://agent:s3cret@127.0.0.1:{port}/agents"
    done = run_cli("serve", ".", cwd=tmp_path, env={"DATABASE_URL": url})
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"error: cannot connect to the database postgresql://agent:***@127.0.0.1:{port}/agents: "
    )
    assert "Connection refused" in done.stderr
    assert "s3cret" not in done.stderr
    assert "Traceback" not in done.stderr and "serving at" not in done.stderr


@needs_aegra
def test_agent_files_are_checked_before_the_database(tmp_path: Path) -> None:
    _folder(tmp_path, "tols: []\n")
    url = f"postgresql://agent@127.0.0.1:{_closed_port()}/agents"
    done = run_cli("serve", ".", "--db", url, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "a.yaml:5:1: tols: unknown key; did you mean 'tools'?\n"


@needs_aegra
def test_a_redis_that_does_not_answer_is_refused(tmp_path: Path, postgres_url: str) -> None:
    _folder(tmp_path)
    redis = f"redis://127.0.0.1:{_closed_port()}/0"
    done = run_cli("serve", ".", "--db", postgres_url, "--redis", redis, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot connect to Redis at {redis}: ")
    assert "Traceback" not in done.stderr and "serving at" not in done.stderr


def test_python_older_than_3_12_is_told_aegra_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.errors import RunError
    from runner.serve import aegra

    monkeypatch.setattr(sys, "version_info", (3, 11, 9, "final", 0))
    with pytest.raises(RunError) as caught:
        aegra.require_aegra()
    assert str(caught.value) == (
        "serving on a database (--db) uses Aegra, which needs Python 3.12 or newer; this "
        "agentctl runs on Python 3.11.9. Reinstall it on Python 3.12+ (scripts/setup picks the "
        "newest Python on the machine), or serve in memory with --dev"
    )


def test_redis_needs_a_database(tmp_path: Path) -> None:
    _folder(tmp_path)
    done = run_cli(
        "serve", ".", "--redis", "redis://localhost", cwd=tmp_path, env={"DATABASE_URL": ""}
    )
    assert done.returncode == 2
    assert "--redis" in done.stderr and "needs --db" in done.stderr


def test_a_port_in_use_is_refused_not_replaced(tmp_path: Path) -> None:
    _folder(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", ".", "--port", str(port), cwd=tmp_path, env={"DATABASE_URL": ""})
    assert done.returncode == 1
    assert f"error: cannot serve on 127.0.0.1:{port}:" in done.stderr
    assert "choose another --port (0 picks a free one)" in done.stderr
    assert "serving at" not in done.stderr


def test_database_urls_are_written_as_libpq_reads_them_and_shown_without_passwords() -> None:
    from runner.serve.aegra import database_url, redact

    assert database_url("postgres://agent@db/agents") == "postgresql://agent@db/agents"
    assert database_url("postgresql+asyncpg://a:b@db:5433/x?sslmode=require") == (
        "postgresql://a:b@db:5433/x?sslmode=require"
    )
    assert redact("postgresql://agent:s3cret@db:5432/agents") == (
        "postgresql://agent:***@db:5432/agents"
    )
    assert redact("redis://:s3cret@cache:6379/0") == "redis://:***@cache:6379/0"
    assert redact("redis://cache:6379/0") == "redis://cache:6379/0"


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--allow-origin", "*", "'*' is not accepted: list each origin"),
        ("--allow-origin", "null", "'null' is not accepted"),
        ("--allow-origin", "localhost:5173", "expected an origin such as http://localhost:5173"),
        ("--allow-origin", "http://x.example/app", "without a path"),
        ("--allow-host", "evil example", "expected a host name or IP address"),
        ("--allow-host", "x.example:http", "expected a host name or IP address"),
        ("--max-body", "10XB", "expected a positive size such as 10MB, 512KB or 1048576"),
        ("--max-body", "0", "expected a positive size"),
    ],
)
def test_bad_browser_safety_values_are_usage_errors(
    tmp_path: Path, flag: str, value: str, said: str
) -> None:
    _folder(tmp_path)
    done = run_cli("serve", ".", flag, value, cwd=tmp_path, env={"DATABASE_URL": ""})
    assert done.returncode == 2, done.stderr
    assert f"Invalid value for '{flag}': " in done.stderr and said in done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stderr


def test_help_documents_the_browser_safety_flags() -> None:
    done = run_cli("serve", "--help")
    text = " ".join(done.stdout.split())
    for flag in (
        "--allow-host NAME",
        "--allow-origin ORIGIN",
        "--max-body SIZE",
        "[default: 10MB]",
    ):
        assert flag in text, flag
    assert "Browser safety is always on" in text
