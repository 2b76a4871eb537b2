"""The file tools as the model sees them: exact ToolMessage texts, through the whole agent.

Every test builds the agent from a spec and drives it with a scripted model; the tools are never
called directly, so what is checked is what a real model would read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.store.memory import InMemoryStore

import runner
from runner.agent.resolve import Resolver
from runner.errors import BuildError
from tests.fakes import ScriptedChatModel
from tests.middleware.helpers import (
    MODES,
    call,
    next_page,
    reassemble,
    reply,
    run,
    spec_file,
    timeless,
    tool_texts,
)

BACKENDS: dict[str, Any] = {
    "state": "state",
    "filesystem": {"kind": "filesystem", "root_dir": "ws"},
    "store": {"kind": "store", "namespace": ["t"]},
    "composite": {
        "kind": "composite",
        "default": "state",
        "routes": {"/notes/": {"kind": "filesystem", "root_dir": "notes-dir"}},
    },
}

A_MD = "alpha\nbeta two\ngamma two\n"
B_TXT = "two\nthree\ntwo again\n"

# (the call the model makes, the exact text it gets back)
SESSION: list[tuple[dict[str, Any], str]] = [
    (call("write_file", file_path="/notes/a.md", content=A_MD), "Updated file /notes/a.md"),
    (
        call("write_file", file_path="/notes/a.md", content="again"),
        "Error: File '/notes/a.md' already exists; read it and use edit_file to change it",
    ),
    (
        call("edit_file", file_path="/notes/a.md", old_string="delta", new_string="d"),
        "Error: old_string was not found in '/notes/a.md'; it must match the file exactly, "
        "including whitespace and indentation: read the file and copy the text",
    ),
    (
        call("edit_file", file_path="/notes/a.md", old_string="two", new_string="2"),
        "Error: old_string occurs 2 times in '/notes/a.md'; include more surrounding lines to "
        "make it unique, or set replace_all to replace every occurrence",
    ),
    (
        call(
            "edit_file", file_path="/notes/a.md", old_string="two", new_string="2", replace_all=True
        ),
        "Successfully replaced 2 instance(s) of the string in /notes/a.md",
    ),
    (
        call("edit_file", file_path="/notes/a.md", old_string="alpha\n", new_string="ALPHA\n"),
        "Successfully replaced 1 instance(s) of the string in /notes/a.md",
    ),
    (call("read_file", file_path="/notes/a.md"), "     1\tALPHA\n     2\tbeta 2\n     3\tgamma 2"),
    (
        call("read_file", file_path="/notes/../../etc/passwd"),
        "Error: Path traversal is not allowed: '/notes/../../etc/passwd'",
    ),
    (
        call("read_file", file_path="C:\\notes\\a.md"),
        "Error: Windows paths are not supported: 'C:\\notes\\a.md'; use paths like /dir/file.txt",
    ),
    (
        call("read_file", file_path="notes/a.md"),
        "Error: Path must be absolute (start with '/'): 'notes/a.md'; use paths like /dir/file.txt",
    ),
    (call("read_file", file_path="/notes/nope.md"), "Error: File not found: '/notes/nope.md'"),
    (
        call("read_file", file_path="/notes/a.md", offset=7),
        "Error: Line offset 7 is past the end of '/notes/a.md', which has 3 lines",
    ),
    (
        call("write_file", file_path="/notes/deep/b.txt", content=B_TXT),
        "Updated file /notes/deep/b.txt",
    ),
    (call("ls", path="/notes"), "/notes/a.md (21 bytes, modified <time>)\n/notes/deep/"),
    (call("ls", path="/notes/deep/"), "/notes/deep/b.txt (20 bytes, modified <time>)"),
    (call("ls", path="/notes/gone"), "Error: Directory not found: '/notes/gone'"),
    (
        call("ls", path="/notes/a.md"),
        "Error: '/notes/a.md' is a file, not a directory; use read_file to read it",
    ),
    (call("glob", pattern="**/*.txt"), "/notes/deep/b.txt"),
    (call("glob", pattern="**/*"), "/notes/a.md\n/notes/deep/b.txt"),
    (call("glob", pattern="*.md", path="/notes"), "/notes/a.md"),
    (call("glob", pattern="*.py"), "No files match '*.py'"),
    (call("grep", pattern="t"), "/notes/a.md\n/notes/deep/b.txt"),
    (
        call("grep", pattern="t", output_mode="content"),
        "/notes/a.md-1- ALPHA\n/notes/a.md:2: beta 2\n/notes/a.md-3- gamma 2\n--\n"
        "/notes/deep/b.txt:1: two\n/notes/deep/b.txt:2: three\n/notes/deep/b.txt:3: two again",
    ),
    (
        call("grep", pattern="t", output_mode="content", context_lines=0),
        "/notes/a.md:2: beta 2\n/notes/deep/b.txt:1: two\n/notes/deep/b.txt:2: three\n"
        "/notes/deep/b.txt:3: two again",
    ),
    (
        call("grep", pattern="^t.o", regex=True, output_mode="content", context_lines=0),
        "/notes/deep/b.txt:1: two\n/notes/deep/b.txt:3: two again",
    ),
    (
        call("grep", pattern="^t.o", output_mode="count"),
        "No matches for '^t.o' (grep searched "
        "for the pattern as literal text; to search for a regular expression, call grep again with "
        "regex true)",
    ),
    (
        call("grep", pattern="(", regex=True),
        "Error: The grep pattern is not a valid regular expression (missing ), unterminated "
        "subpattern at position 0); fix it, or search for literal text with regex false",
    ),
    (call("grep", pattern="t", output_mode="count"), "/notes/a.md: 1\n/notes/deep/b.txt: 3"),
    (call("grep", pattern="two", glob="*.txt", output_mode="count"), "/notes/deep/b.txt: 2"),
    (
        call("grep", pattern="t", path="/notes/a.md", output_mode="content"),
        "/notes/a.md-1- ALPHA\n/notes/a.md:2: beta 2\n/notes/a.md-3- gamma 2",
    ),
    (
        call("grep", pattern="(", path="/notes"),
        "No matches for '(' (grep searched for the pattern as literal text; to search for a "
        "regular expression, call grep again with regex true)",
    ),
    (call("grep", pattern="a.md", path="/notes"), "No matches for 'a.md'"),
    (
        call("execute", command="ls"),
        "Error: execute is not a valid tool, try one of [ls, read_file, write_file, edit_file, "
        "glob, grep].",
    ),
]


def scripted(calls: list[dict[str, Any]]) -> ScriptedChatModel:
    return ScriptedChatModel(script=[*(reply("", c) for c in calls), reply("done")])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_tool_and_error_as_the_model_reads_it(
    tmp_path: Path, backend: str, mode: str
) -> None:
    model = scripted([c for c, _ in SESSION])
    agent = runner.build_agent(
        spec_file(tmp_path, backend=BACKENDS[backend]), model=model, store=InMemoryStore()
    )
    result = run(agent, "go", mode)
    assert [timeless(t) for t in tool_texts(result["messages"])] == [text for _, text in SESSION]
    statuses = [m.status for m in result["messages"] if m.type == "tool"]
    assert statuses == ["error" if t.startswith("Error:") else "success" for _, t in SESSION]
    if backend == "filesystem":
        assert (tmp_path / "ws" / "notes" / "a.md").read_text() == "ALPHA\nbeta 2\ngamma 2\n"
    if backend == "composite":
        assert (tmp_path / "notes-dir" / "deep" / "b.txt").read_text() == B_TXT
    if backend == "state":
        assert {p: f["content"] for p, f in result["files"].items()} == {
            "/notes/a.md": "ALPHA\nbeta 2\ngamma 2\n",
            "/notes/deep/b.txt": B_TXT,
        }


def test_ls_shows_size_and_modification_time_in_utc(tmp_path: Path) -> None:
    """Seed 004: `ls` lists files with their metadata (size, modification time)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.md").write_text("hello")
    os.utime(tmp_path / "ws" / "a.md", (0, 1_700_000_000))
    (tmp_path / "ws" / "sub").mkdir()
    model = scripted([call("ls", path="/")])
    backend = {"kind": "filesystem", "root_dir": "ws"}
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    assert tool_texts(run(agent, "go")["messages"]) == [
        "/a.md (5 bytes, modified 2023-11-14 22:13:20 UTC)\n/sub/"
    ]
    from runner.backends import FileInfo
    from runner.middleware.filesystem import ls_line

    assert ls_line(FileInfo("/s.md", False, 3, "2026-01-02T03:04:05.123+02:00")) == (
        "/s.md (3 bytes, modified 2026-01-02 01:04:05 UTC)"
    )
    assert (
        ls_line(FileInfo("/s.md", False, 3, "yesterday")) == "/s.md (3 bytes, modified yesterday)"
    )
    assert ls_line(FileInfo("/s.md", False)) == "/s.md"


# --------------------------------------------------------------------------- read_file paging

NUMBERED = "".join(f"row {i}\n" for i in range(1, 251))


def read_replies(*reads: dict[str, Any]) -> list[dict[str, Any]]:
    return [call("write_file", file_path="/n.txt", content=NUMBERED), *reads]


def rows(first: int, last: int) -> str:
    return "\n".join(f"{i:>6}\trow {i}" for i in range(first, last + 1))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["state", "filesystem"])
def test_read_file_pages_and_says_where_to_read_on(tmp_path: Path, backend: str, mode: str) -> None:
    model = scripted(
        read_replies(
            call("read_file", file_path="/n.txt"),
            call("read_file", file_path="/n.txt", offset=100),
            call("read_file", file_path="/n.txt", offset=200),
            call("read_file", file_path="/n.txt", offset=5, limit=3),
            call("read_file", file_path="/n.txt", offset=250),
        )
    )
    agent = runner.build_agent(spec_file(tmp_path, backend=BACKENDS[backend]), model=model)
    texts = tool_texts(run(agent, "go", mode)["messages"])
    assert texts[1:] == [
        rows(1, 100) + "\n\n[Lines 1-100 of 250: read on with offset=100.]",
        rows(101, 200) + "\n\n[Lines 101-200 of 250: read on with offset=200.]",
        rows(201, 250),
        rows(6, 8) + "\n\n[Lines 6-8 of 250: read on with offset=8.]",
        "Error: Line offset 250 is past the end of '/n.txt', which has 250 lines",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_long_line_continues_in_rows_n_1_n_2(tmp_path: Path, mode: str) -> None:
    long_line = "a" * 5000 + "b" * 5000 + "c" * 2001
    model = scripted(
        [
            call("write_file", file_path="/long.txt", content=f"short\n{long_line}\nend\n"),
            call("read_file", file_path="/long.txt"),
            call("read_file", file_path="/long.txt", offset=1, limit=1),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path), model=model)
    texts = tool_texts(run(agent, "go", mode)["messages"])
    continued = f"     2\t{'a' * 5000}\n   2.1\t{'b' * 5000}\n   2.2\t{'c' * 2001}"
    assert texts[1] == f"     1\tshort\n{continued}\n     3\tend"
    assert texts[2] == continued + "\n\n[Lines 2-2 of 3: read on with offset=2.]"


def test_one_read_stays_within_the_budget_and_paging_always_advances(tmp_path: Path) -> None:
    # 1,000 tokens = 4,000 characters per read. A "model" that follows the notes reads the
    # whole file, a line longer than the budget included, and never asks for the same page twice.
    lines = [f"line {i:03} " + "x" * 90 for i in range(120)]
    lines[50] = "L" * 9000
    content = "\n".join(lines) + "\n"

    def follow_the_notes(messages: list[BaseMessage]) -> dict[str, Any]:
        if not any(m.type == "tool" for m in messages):
            return reply("", call("write_file", file_path="/w.txt", content=content))
        return next_page(messages, "/w.txt", limit=1000) or reply("read it all")

    spec = spec_file(tmp_path, filesystem={"evict_results_over_tokens": 1000})
    agent = runner.build_agent(spec, model=ScriptedChatModel(script=follow_the_notes))
    messages = run(agent, "go")["messages"]
    reads = [m for m in messages if m.type == "ai" and m.tool_calls]
    offsets = [m.tool_calls[0]["args"].get("offset") for m in reads[1:]]
    pages = [str(m.content) for m in messages if m.type == "tool" and m.name == "read_file"]
    assert offsets == [0, 35, 50, 51, 86] and len(pages) == len(offsets)
    assert all(len(page) <= 4000 for page in pages)
    assert pages[0].endswith(
        "\n\n[Lines 1-35 of 120: the next line would pass the 4,000-character limit of one read; "
        "read on with offset=35.]"
    )
    assert pages[2].startswith("    51\t") and pages[2].endswith(
        "\n\n[Line 51 is 9,000 characters, more than one read can show (4,000); only its first "
        "3,793 are shown. The next line is at offset=51.]"
    )
    shown = reassemble(pages)
    assert shown == {i + 1: line if i != 50 else "L" * 3793 for i, line in enumerate(lines)}


@pytest.mark.parametrize("mode", MODES)
def test_a_file_over_max_file_size_is_refused(tmp_path: Path, mode: str) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "big.log").write_text("z" * 1_572_864)
    backend = {"kind": "filesystem", "root_dir": "ws", "max_file_size_mb": 1}
    model = scripted(
        [
            call("read_file", file_path="/big.log"),
            call("edit_file", file_path="/big.log", old_string="z", new_string="y"),
            call("ls", path="/"),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    assert [timeless(t) for t in tool_texts(run(agent, "go", mode)["messages"])] == [
        "Error: '/big.log' is 1.5 MB, over the 1 MB limit for reading files",
        "Error: '/big.log' is 1.5 MB, over the 1 MB limit for reading files",
        "/big.log (1,572,864 bytes, modified <time>)",
    ]


# --------------------------------------------------------------------------- execute


@pytest.mark.parametrize("mode", MODES)
def test_execute_reports_the_exit_status_and_truncation(tmp_path: Path, mode: str) -> None:
    backend = {"kind": "local_shell", "root_dir": "ws", "max_output_bytes": 10}
    model = scripted(
        [
            call("execute", command="echo hi; exit 3"),
            call("execute", "cut", command="printf abcdefghijklmnop"),
            call("execute", command="true"),
            call("write_file", file_path="/made.txt", content="made"),
            call("execute", command="cat made.txt"),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    assert tool_texts(run(agent, "go", mode)["messages"]) == [
        "hi\n[Command failed with exit code 3]",
        "abcde\n... [6 bytes of output not shown] ...\nlmnop\n[Command succeeded with exit code 0]"
        "\n[Output was truncated due to size limits: its middle is not shown]\n[The whole output "
        "(16 bytes) is saved to /large_tool_results/cut: read it in pages with read_file (offset "
        "and limit), or search it with grep.]",
        "[Command succeeded with exit code 0]",
        "Updated file /made.txt",
        "made\n[Command succeeded with exit code 0]",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_long_output_shows_head_and_tail_and_the_whole_is_saved(tmp_path: Path, mode: str) -> None:
    """`seq 1 30000` is ~170 KB: the answer shows its first and last lines within the eviction
    budget, and the saved file holds all of it, down to the last line."""
    backend = {"kind": "local_shell", "root_dir": "ws"}
    model = scripted([call("execute", "long", command="seq 1 30000")])
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    [answer] = tool_texts(run(agent, "go", mode)["messages"])
    assert answer.startswith("1\n2\n3\n")
    assert "\n29999\n30000\n[Command succeeded with exit code 0]" in answer
    assert answer.endswith(
        "[The whole output (168,894 bytes) is saved to /large_tool_results/long: read it in "
        "pages with read_file (offset and limit), or search it with grep.]"
    )
    assert len(answer) <= 80_000  # within the eviction budget: not evicted again
    saved = (tmp_path / "ws" / "large_tool_results" / "long").read_text()
    assert saved == "".join(f"{n}\n" for n in range(1, 30001))


def test_long_output_is_saved_where_large_results_are_routed(tmp_path: Path) -> None:
    backend = {
        "kind": "composite",
        "default": {"kind": "local_shell", "root_dir": "ws"},
        "routes": {"/large_tool_results/": "state"},
    }
    model = scripted([call("execute", "long", command="seq 1 30000")])
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    files = run(agent, "go")["files"]
    assert files["/large_tool_results/long"]["content"].endswith("29999\n30000\n")


def test_with_eviction_off_long_output_is_only_cut(tmp_path: Path) -> None:
    backend = {"kind": "local_shell", "root_dir": "ws", "max_output_bytes": 100}
    model = scripted([call("execute", "long", command="seq 1 30000")])
    spec = spec_file(tmp_path, backend=backend, filesystem={"evict_results_over_tokens": None})
    agent = runner.build_agent(spec, model=model)
    [answer] = tool_texts(run(agent, "go")["messages"])
    assert "bytes of output not shown" in answer and "30000\n[Command succeeded" in answer
    assert "saved" not in answer
    assert not (tmp_path / "ws" / "large_tool_results").exists()


def test_a_command_over_the_timeout_is_killed_and_says_so(tmp_path: Path) -> None:
    backend = {"kind": "local_shell", "root_dir": "ws", "timeout": 0.3}
    model = scripted([call("execute", command="echo started; sleep 5")])
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    assert tool_texts(run(agent, "go")["messages"]) == [
        "started\n[Command timed out after 0.3 seconds; it was killed together with every "
        "process it started]"
    ]


def test_a_call_sets_its_own_timeout_within_the_workspace_maximum(tmp_path: Path) -> None:
    """Seed 004: `execute(command, timeout)`. A call may shorten or lengthen the limit, never
    past `max_timeout` (the operator's ceiling)."""
    backend = {"kind": "local_shell", "root_dir": "ws", "timeout": 60, "max_timeout": 61}
    model = scripted(
        [
            call("execute", command="echo started; sleep 5", timeout=0.3),
            call("execute", command="echo ok", timeout=100000),
            call("execute", command="true", timeout=-1),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path, backend=backend), model=model)
    assert tool_texts(run(agent, "go")["messages"]) == [
        "started\n[Command timed out after 0.3 seconds; it was killed together with every "
        "process it started]",
        "ok\n[Command succeeded with exit code 0]",
        "Error: timeout must be a positive number of seconds, got -1",
    ]
    schema = next(t for t in model.bound_tools if t.name == "execute").tool_call_schema
    assert list(schema.model_json_schema()["properties"]) == ["command", "timeout"]


# --------------------------------------------------------------------------- what the model is offered

FILES_SECTION = """\
## Files `ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep`

You have a filesystem for notes, drafts and results. Every path is absolute and starts with `/`.
- ls: list a directory
- read_file: read a file, in pages (offset/limit)
- write_file: create a new file
- edit_file: change part of an existing file
- glob: find files by name pattern, e.g. `**/*.md`
- grep: find files containing some text"""
LARGE_RESULTS = """

A tool result too large for your context is saved under /large_tool_results/ and shown to you as
a preview; read the file for the rest."""
EXECUTE_SECTION = """\
## Shell `execute`

You can run shell commands with `execute`, in the same folder your files are in. Use it to run
scripts, tests and builds, and check the exit status in its result before relying on the output."""


def offered(tmp_path: Path, **fields: Any) -> tuple[dict[str, dict[str, Any]], str]:
    """(tool schemas by name, system prompt) as the model receives them on its first call."""
    model = scripted([])
    agent = runner.build_agent(spec_file(tmp_path, **fields), model=model, store=InMemoryStore())
    run(agent, "hi")
    schemas = [convert_to_openai_tool(t)["function"] for t in model.bound_tools]
    return {s["name"]: s for s in schemas}, str(model.calls[0][0].content)


def test_a_state_backend_offers_the_six_file_tools_and_no_execute(tmp_path: Path) -> None:
    tools, prompt = offered(tmp_path, prompt="Be brief.")
    assert list(tools) == ["ls", "read_file", "write_file", "edit_file", "glob", "grep"]
    assert tools["read_file"]["parameters"] == {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": "Absolute path of the file, e.g. /notes/plan.md",
            },
            "offset": {
                "type": "integer",
                "default": 0,
                "description": "Index of the first line to read (0-based)",
            },
            "limit": {"type": "integer", "default": 100, "description": "How many lines to read"},
        },
        "required": ["file_path"],
    }
    assert tools["grep"]["parameters"]["properties"]["output_mode"] == {
        "type": "string",
        "enum": ["files_with_matches", "content", "count"],
        "default": "files_with_matches",
        "description": "files_with_matches, content, or count",
    }
    assert tools["edit_file"]["parameters"]["required"] == ["file_path", "old_string", "new_string"]
    assert tools["glob"]["parameters"]["properties"]["path"]["default"] == "/"
    assert prompt.endswith("\n\n" + FILES_SECTION + LARGE_RESULTS)
    assert "execute" not in prompt


def test_a_local_shell_backend_adds_execute_and_its_paragraph(tmp_path: Path) -> None:
    tools, prompt = offered(tmp_path, backend={"kind": "local_shell", "root_dir": "ws"})
    assert list(tools) == ["ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute"]
    assert tools["execute"]["parameters"]["required"] == ["command"]
    assert prompt.endswith("\n\n" + FILES_SECTION + LARGE_RESULTS + "\n\n" + EXECUTE_SECTION)


def test_a_composite_executes_only_when_its_default_can(tmp_path: Path) -> None:
    shell_default = {
        "kind": "composite",
        "default": {"kind": "local_shell", "root_dir": "ws"},
        "routes": {"/memories/": {"kind": "store"}},
    }
    tools, prompt = offered(tmp_path, backend=shell_default)
    assert "execute" in tools and prompt.endswith(EXECUTE_SECTION)
    state_default = {
        "kind": "composite",
        "default": "state",
        "routes": {"/code/": {"kind": "local_shell", "root_dir": "ws"}},
    }
    tools, prompt = offered(tmp_path, backend=state_default)
    assert "execute" not in tools and "execute" not in prompt


def test_the_allowlist_descriptions_and_prompt_come_from_the_spec(tmp_path: Path) -> None:
    tools, prompt = offered(
        tmp_path,
        filesystem={
            "tools": ["read_file", "grep"],
            "tool_descriptions": {"grep": "Search the notes."},
        },
    )
    assert list(tools) == ["read_file", "grep"]
    assert tools["grep"]["description"] == "Search the notes."
    assert tools["read_file"]["description"].startswith(
        "Read a file. `file_path` must be absolute."
    )
    assert prompt.endswith(
        "## Files `read_file`, `grep`\n\nYou have a filesystem for notes, drafts and results. "
        "Every path is absolute and starts with `/`.\n"
        "- read_file: read a file, in pages (offset/limit)\n"
        "- grep: find files containing some text" + LARGE_RESULTS
    )
    _, prompt = offered(tmp_path, filesystem={"system_prompt": "Keep notes in /notes/."})
    assert prompt.endswith("\n\nKeep notes in /notes/.") and "## Files" not in prompt


def test_without_result_eviction_the_prompt_does_not_promise_it(tmp_path: Path) -> None:
    _, prompt = offered(tmp_path, filesystem={"evict_results_over_tokens": None})
    assert prompt.endswith("\n\n" + FILES_SECTION)


def test_execute_in_the_allowlist_needs_a_backend_that_can_run_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = spec_file(tmp_path, model="openai:gpt-4.1", filesystem={"tools": ["ls", "execute"]})
    with pytest.raises(BuildError) as caught:
        Resolver(with_models=False).resolve(runner.load_spec(spec))
    assert str(caught.value) == (
        "agent.yaml:8:5: filesystem.tools[1]: `execute` needs a backend that can run commands "
        "(kind: local_shell, or a composite whose default is one); this agent's backend is state"
    )


PARALLEL_REFUSAL = (
    "Error: '/a.md' is also changed by an earlier call in this same message, and parallel "
    "changes to one file overwrite each other; make this change in your next message"
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["state", "composite"])
def test_parallel_changes_to_one_state_file_refuse_all_after_a_success(
    tmp_path: Path, backend: str, mode: str
) -> None:
    # Parallel calls start from the same files: without the refusal both edits reported success
    # and the state backend kept only the last one. (The composite's default is a state backend.)
    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/a.md", content="one\ntwo\n")),
            reply(
                "",
                call("edit_file", file_path="/a.md", old_string="one", new_string="ONE"),
                call("edit_file", file_path="//a.md", old_string="two", new_string="TWO"),
                call("write_file", file_path="/a.md", content="three\n"),
                call("write_file", file_path="/b.md", content="other file\n"),
            ),
            reply("", call("edit_file", file_path="/a.md", old_string="two", new_string="TWO")),
            reply("", call("read_file", file_path="/a.md")),
            reply("done"),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path, backend=BACKENDS[backend]), model=model)
    assert tool_texts(run(agent, "go", mode)["messages"]) == [
        "Updated file /a.md",
        "Successfully replaced 1 instance(s) of the string in /a.md",
        PARALLEL_REFUSAL,
        PARALLEL_REFUSAL,
        "Updated file /b.md",
        "Successfully replaced 1 instance(s) of the string in /a.md",
        "     1\tONE\n     2\tTWO",
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["state", "filesystem", "store"])
def test_a_change_after_failed_ones_to_the_same_file_runs(
    tmp_path: Path, backend: str, mode: str
) -> None:
    """Issue 22 (seed parity): the model does not lose a turn because an earlier call of its
    reply on the same file failed. On the state backend the order is the message's, whichever
    call the scheduler runs first."""
    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/a.md", content="one\ntwo\n")),
            reply(
                "",
                call("edit_file", file_path="/a.md", old_string="absent", new_string="x"),
                call("write_file", file_path="/a.md", content="exists already"),
                call("edit_file", file_path="/a.md", old_string="one", new_string="ONE"),
            ),
            reply("", call("read_file", file_path="/a.md")),
            reply("done"),
        ]
    )
    spec = spec_file(tmp_path, backend=BACKENDS[backend])
    agent = runner.build_agent(spec, model=model, store=InMemoryStore())
    texts = tool_texts(run(agent, "go", mode)["messages"])
    assert texts[1].startswith("Error: old_string was not found in '/a.md'")
    assert texts[2].startswith("Error: File '/a.md' already exists")
    assert texts[3:] == [
        "Successfully replaced 1 instance(s) of the string in /a.md",
        "     1\tONE\n     2\ttwo",
    ]


def test_a_change_refused_by_the_reviewer_does_not_block_the_next(tmp_path: Path) -> None:
    """A rejected call has its (error) ToolMessage before the tools run: it changed nothing."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/a.md", content="one\n")),
            reply(
                "",
                call("edit_file", file_path="/a.md", old_string="one", new_string="BAD"),
                call("write_file", file_path="/b.md", content="b"),
                call("edit_file", file_path="/a.md", old_string="one", new_string="GOOD"),
            ),
            reply("", call("read_file", file_path="/a.md")),
            reply("done"),
        ]
    )
    spec = spec_file(tmp_path, interrupt_on={"edit_file": {"when": {"new_string": "BAD"}}})
    agent = runner.build_agent(spec, model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = run(agent, "go", config=config)
    assert "__interrupt__" in first
    result = agent.invoke(Command(resume={"decisions": [{"type": "reject"}]}), config)
    texts = tool_texts(result["messages"])
    assert texts[-2:] == [
        "Successfully replaced 1 instance(s) of the string in /a.md",
        "     1\tGOOD",
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["filesystem", "store"])
def test_parallel_changes_to_one_real_file_run_one_at_a_time(
    tmp_path: Path, backend: str, mode: str
) -> None:
    """On backends holding real files, each change sees the one before: none is lost."""
    edits = [
        call("edit_file", file_path="/a.md", old_string=f"line {i}\n", new_string=f"LINE {i}\n")
        for i in range(8)
    ]
    content = "".join(f"line {i}\n" for i in range(8))
    model = ScriptedChatModel(
        script=[
            reply("", call("write_file", file_path="/a.md", content=content)),
            reply("", *edits),
            reply("", call("read_file", file_path="/a.md")),
            reply("done"),
        ]
    )
    spec = spec_file(tmp_path, backend=BACKENDS[backend])
    agent = runner.build_agent(spec, model=model, store=InMemoryStore())
    texts = tool_texts(run(agent, "go", mode)["messages"])
    assert texts[1:9] == ["Successfully replaced 1 instance(s) of the string in /a.md"] * 8
    assert texts[9] == "\n".join(f"{i + 1:>6}\tLINE {i}" for i in range(8))


def test_grep_context_windows_merge_when_they_touch(tmp_path: Path) -> None:
    """Matches a few lines apart share one group; a file's first and last lines bound it."""
    text = "".join(f"line {n}{' hit' if n in (1, 5, 12) else ''}\n" for n in range(1, 14))
    model = scripted(
        [
            call("write_file", file_path="/log.txt", content=text),
            call("grep", pattern="hit", output_mode="content"),
            call("grep", pattern="hit", output_mode="content", context_lines=1),
        ]
    )
    agent = runner.build_agent(spec_file(tmp_path), model=model)
    answers = tool_texts(run(agent, "go")["messages"])[1:]
    assert answers[0].splitlines() == [
        "/log.txt:1: line 1 hit",
        *(f"/log.txt-{n}- line {n}" for n in range(2, 5)),
        "/log.txt:5: line 5 hit",
        *(f"/log.txt-{n}- line {n}" for n in range(6, 8)),
        "--",
        *(f"/log.txt-{n}- line {n}" for n in range(10, 12)),
        "/log.txt:12: line 12 hit",
        "/log.txt-13- line 13",
    ]
    assert answers[1].splitlines() == [
        "/log.txt:1: line 1 hit",
        "/log.txt-2- line 2",
        "--",
        "/log.txt-4- line 4",
        "/log.txt:5: line 5 hit",
        "/log.txt-6- line 6",
        "--",
        "/log.txt-11- line 11",
        "/log.txt:12: line 12 hit",
        "/log.txt-13- line 13",
    ]
