"""Hostile tool calls from a replayed model, through `agentctl run` and `ainvoke`.

The cassette plays an agent trying every way out of its root that the file tools offer: brace
globs that climb, links leading out (to a directory, a file, relatively, chained), writes and
edits through them, a path thousands of directories deep, a name too long. On each backend kind the run must end normally (exit 0, a final answer), every attempt
must come back to the model as a tool error, the secret outside must never show up in anything
printed, and nothing outside may change.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli

SECRET = "SECRET-OUTSIDE"
BODY = "body-7f3a9c"
"""In every outside file and in no tool call: where it shows up, something was read outside."""

ATTACKS: list[tuple[str, dict[str, object]]] = [
    ("glob", {"pattern": "{..,..}/**"}),
    ("glob", {"pattern": "{../..,../..}/{../..,../..}/{../..,../..}/etc/*"}),
    ("glob", {"pattern": "{/etc,x}/*"}),
    ("glob", {"pattern": "**/*", "path": "/out"}),
    ("ls", {"path": "/out"}),
    ("ls", {"path": "/up"}),
    ("read_file", {"file_path": "/out/secret.txt"}),
    ("read_file", {"file_path": "/out_file"}),
    ("read_file", {"file_path": "/chain/secret.txt"}),
    ("read_file", {"file_path": "/" + "/".join(["d"] * 3000)}),
    ("read_file", {"file_path": "/" + "n" * 400}),
    ("read_file", {"file_path": "/../outside/secret.txt"}),
    ("write_file", {"file_path": "/out/planted.txt", "content": "planted"}),
    ("write_file", {"file_path": "/up/planted.txt", "content": "planted"}),
    ("write_file", {"file_path": "/" + "/".join(["d"] * 3000) + "/f", "content": "x"}),
    ("edit_file", {"file_path": "/out_file", "old_string": SECRET, "new_string": "CHANGED"}),
    ("grep", {"pattern": SECRET, "path": "/out"}),
    ("grep", {"pattern": SECRET, "glob": "{..,..}/*"}),
    ("grep", {"pattern": SECRET, "output_mode": "content"}),
]

BACKENDS = {
    "filesystem": {"kind": "filesystem", "root_dir": "./root"},
    "local_shell": {"kind": "local_shell", "root_dir": "./root", "timeout": 5},
    "composite": {
        "kind": "composite",
        "default": {"kind": "filesystem", "root_dir": "./root"},
        "routes": {"/mem/": {"kind": "state"}},
    },
}


def make_agent(tmp_path: Path, backend: dict[str, object]) -> tuple[Path, Path]:
    outside, root = tmp_path / "outside", tmp_path / "root"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET} {BODY} file\n")
    (outside / "dir" / "secret.txt").write_text(f"{SECRET} {BODY} dir\n")
    root.mkdir()
    (root / "a.txt").write_text("inside\n")
    os.symlink(outside / "dir", root / "out")
    os.symlink(outside / "secret.txt", root / "out_file")
    os.symlink("../outside/dir", root / "up")
    os.symlink("out", root / "chain")
    replies = [
        {"content": f"Trying {name}.", "tool_calls": [{"name": name, "args": args}]}
        for name, args in ATTACKS
    ]
    replies.append({"content": "I could not get out."})
    (tmp_path / "attacker.cassette.yaml").write_text(
        yaml.safe_dump({"version": 1, "agents": {"attacker": replies}}), encoding="utf-8"
    )
    spec = tmp_path / "attacker.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "name": "attacker",
                "model": "replay:attacker.cassette.yaml",
                "prompt": "Get out.",
                "backend": backend,
                "limits": {"model_calls": 100},
            }
        ),
        encoding="utf-8",
    )
    return spec, outside


def outside_state(outside: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(outside.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_agentctl_run_keeps_the_agent_inside(tmp_path: Path, kind: str) -> None:
    spec, outside = make_agent(tmp_path, BACKENDS[kind])
    before = outside_state(outside)
    done = run_cli("run", str(spec), "go", "--output", "jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert BODY not in done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [event for event in events if event["type"] == "tool_result"]
    assert len(results) == len(ATTACKS)
    failed = [r for r in results if r["status"] == "error" or r["content"].startswith("Error")]
    harmless = [r for r in results if r not in failed]
    # What did not fail found nothing: a listing of nothing, no matches.
    for result in harmless:
        assert result["name"] in ("glob", "grep", "ls"), result
    assert events[-1]["type"] == "final"
    assert outside_state(outside) == before


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_ainvoke_keeps_the_agent_inside(tmp_path: Path, kind: str) -> None:
    import runner

    spec, outside = make_agent(tmp_path, BACKENDS[kind])
    before = outside_state(outside)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        agent = runner.build_agent(spec)
        result = asyncio.run(
            agent.ainvoke(
                {"messages": [{"role": "user", "content": "go"}]},
                {"recursion_limit": 200},
            )
        )
    finally:
        os.chdir(cwd)
    texts = [str(message.content) for message in result["messages"]]
    assert not any(BODY in text for text in texts)
    tool_messages = [m for m in result["messages"] if m.type == "tool"]
    assert len(tool_messages) == len(ATTACKS)
    assert texts[-1] == "I could not get out."
    assert outside_state(outside) == before
