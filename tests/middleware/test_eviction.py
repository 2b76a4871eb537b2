"""Large tool results go to a file; the model gets a preview and pages through the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.messages import BaseMessage
from langgraph.store.memory import InMemoryStore

import runner
from tests.conftest import ROOT
from tests.data.tools.big_tools import export_log, log_line
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import (
    call,
    next_page,
    reassemble,
    reply,
    run,
    spec_file,
    tool_texts,
)

BIG_TOOLS = ROOT / "tests" / "data" / "tools" / "big_tools.py"
TOOLS = [f"{BIG_TOOLS}:export_log", f"{BIG_TOOLS}:characters"]
SAVED = "/large_tool_results/call_export"


def numbered(first: int, last: int) -> str:
    return "\n".join(f"{n:>6}\t{log_line(n)}" for n in range(first, last + 1))


EVICTED_NOTE = (
    "This result was too large for your context (2,000,000 characters), so it was saved to "
    f"{SAVED}.\nRead it in pages with read_file (offset and limit), or search it with grep.\n"
    "Its first and last lines:\n\n"
    + numbered(1, 5)
    + "\n... [19,990 lines not shown] ...\n"
    + numbered(19996, 20000)
)


def export_then_page(messages: list[BaseMessage]) -> dict[str, Any]:
    """Call the big tool, then read the file it was saved to, page after page, as told."""
    if not any(m.type == "tool" for m in messages):
        return reply("", call("export_log", "call_export"))
    return next_page(messages, SAVED, limit=1000) or reply("I read the whole log.")


@pytest.mark.parametrize(
    ("backend", "mode"),
    [("state", "invoke"), ("state", "ainvoke"), ("filesystem", "invoke"), ("store", "ainvoke")],
)
def test_a_2mb_result_becomes_a_preview_and_a_file_read_in_pages(
    tmp_path: Path, backend: str, mode: str
) -> None:
    backends = {
        "state": "state",
        "filesystem": {"kind": "filesystem", "root_dir": "ws"},
        "store": {"kind": "store", "namespace": ["t"]},
    }
    # Paging through 2 MB passes the summarization trigger; this test is about eviction.
    spec = spec_file(tmp_path, tools=TOOLS, backend=backends[backend], summarization=False)
    model = ScriptedChatModel(script=export_then_page)
    store = InMemoryStore()
    result = run(runner.build_agent(spec, model=model, store=store), "export the log", mode)
    messages = result["messages"]
    evicted = next(m for m in messages if m.type == "tool" and m.name == "export_log")
    assert evicted.content == EVICTED_NOTE
    assert len(EVICTED_NOTE) <= 20_000 * 4
    pages = [str(m.content) for m in messages if m.type == "tool" and m.name == "read_file"]
    assert all(len(page) <= 20_000 * 4 for page in pages) and len(pages) == 27
    assert pages[0].endswith(
        "\n\n[Lines 1-745 of 20000: the next line would pass the 80,000-character limit of one "
        "read; read on with offset=745.]"
    )
    assert reassemble(pages) == {n: log_line(n) for n in range(1, 20_001)}
    assert messages[-1].text == "I read the whole log."
    if backend == "state":
        assert result["files"][SAVED]["content"] == export_log()
    if backend == "filesystem":
        assert (tmp_path / "ws" / "large_tool_results" / "call_export").read_text() == export_log()
    if backend == "store":
        assert store.get(("t",), SAVED) is not None


def test_the_preview_shrinks_to_keep_a_small_budget(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, tools=TOOLS, filesystem={"evict_results_over_tokens": 300})
    model = ScriptedChatModel(
        script=[reply("", call("export_log", "call_export", lines=300)), reply("ok")]
    )
    [note] = tool_texts(run(runner.build_agent(spec, model=model), "go")["messages"])
    # 300 tokens = 1,200 characters: the ten preview lines (99 characters each) are cut to fit
    assert len(note) <= 1200
    assert note.splitlines()[4] == f"     1\t{log_line(1)[:86]}"


def test_results_at_the_budget_stay_and_one_more_character_is_evicted(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, tools=TOOLS, filesystem={"evict_results_over_tokens": 100})
    model = ScriptedChatModel(
        script=[
            reply("", call("characters", "at", count=400), call("characters", "over", count=401)),
            reply("ok"),
        ]
    )
    result = run(runner.build_agent(spec, model=model), "go")
    kept, evicted = tool_texts(result["messages"])
    assert kept == "x" * 400
    assert evicted.startswith(
        "This result was too large for your context (401 characters), so it was saved to "
        "/large_tool_results/over.\n"
    )
    assert list(result["files"]) == ["/large_tool_results/over"]


def test_null_keeps_results_whole(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, tools=TOOLS, filesystem={"evict_results_over_tokens": None})
    model = ScriptedChatModel(script=[reply("", call("export_log")), reply("ok")])
    result = run(runner.build_agent(spec, model=model), "go")
    assert tool_texts(result["messages"]) == [export_log()]
    assert "files" not in result or not result["files"]


def test_the_file_tools_are_never_evicted(tmp_path: Path) -> None:
    # 100 tokens = 400 characters; the file tools keep within it on their own (pages, truncated
    # lists) instead of being saved to a file the model would have to read with... read_file.
    many = "".join(f"/notes/n{i:02}.md: hello {i}\n" for i in range(40))
    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/notes/all.md", content=many)),
            reply("", call("read_file", file_path="/notes/all.md")),
            reply("", call("grep", pattern="hello", output_mode="content")),
            reply("ok"),
        ]
    )
    spec = spec_file(tmp_path, filesystem={"evict_results_over_tokens": 100})
    result = run(runner.build_agent(spec, model=model), "go")
    _, read, grep = tool_texts(result["messages"])
    assert read.startswith("     1\t/notes/n00.md: hello 0\n") and read.endswith(
        "\n\n[Lines 1-6 of 40: the next line would pass the 400-character limit of one read; "
        "read on with offset=6.]"
    )
    assert grep.startswith("/notes/all.md:1: /notes/n00.md: hello 0\n") and grep.endswith(
        "\n... [31 more not shown: narrow the path or the pattern]"
    )
    assert list(result["files"]) == ["/notes/all.md"]


def test_a_large_task_result_is_evicted_and_the_subagents_files_still_merge(
    tmp_path: Path,
) -> None:
    (tmp_path / "team.cassette.yaml").write_text(
        yaml.safe_dump(
            {
                "agents": {
                    "lead": [
                        reply("", call("task", "t1", description="Survey", subagent_type="w")),
                        reply("Noted."),
                    ],
                    "w": [
                        reply("", call("write_file", file_path="/w.md", content="found it")),
                        reply("R" * 300),
                    ],
                }
            }
        )
    )
    spec = spec_file(
        tmp_path,
        name="lead",
        model="replay:team.cassette.yaml",
        subagents=[{"name": "w", "description": "Surveys"}],
        filesystem={"evict_results_over_tokens": 50},
    )
    result = run(runner.build_agent(spec), "go")
    [task_result] = tool_texts(result["messages"])
    assert task_result.startswith(
        "This result was too large for your context (300 characters), so it was saved to "
        "/large_tool_results/t1.\n"
    )
    assert {p: f["content"] for p, f in result["files"].items()} == {
        "/w.md": "found it",
        "/large_tool_results/t1": "R" * 300,
    }
