"""`agentctl serve` refusing to start: every case exits non-zero with a clear message and no
traceback, before any server starts."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.conftest import run_cli

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


def test_a_database_is_refused_until_it_is_supported(tmp_path: Path) -> None:
    _folder(tmp_path)
    done = run_cli(
        "serve", ".", cwd=tmp_path, env={"DATABASE_URL": "postgresql://localhost/agents"}
    )
    assert done.returncode == 1
    assert "serving on a database (--db / $DATABASE_URL) is not available yet" in done.stderr
    assert "Traceback" not in done.stderr


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
