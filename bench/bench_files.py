"""File tools through the agent: (a) create_agent with hand-written tools, (b) deepagents,
(c) agentctl, side by side.

Run: .venv/bin/python bench/bench_files.py [--repeat 3] [--quick]

Every figure is the time between two model calls of an instant scripted model, so it is what
the tool calls cost inside the agent loop (tool node, middleware, state reducers):

- `write_file` on the state backend, 100 calls in ONE AI message, into a state that holds no
  files and into one that holds 900 (the same short conversation): the per-write cost must not
  grow with the number of files (the target);
- 1,000 `write_file` calls: all in one AI message; in 10 messages of 100 in one run (first vs
  tenth batch: the conversation grows by 200 messages a batch, and LangGraph's `add_messages`
  reducer, run once per ToolMessage, grows with it); and one per step (first vs last 50 steps);
- `grep` and `glob` over the 1,000 state files just written;
- `grep` over 5,000 files on the filesystem backend (bench_backends.py has the raw backend).

(a) is what a user would write with bare create_agent: a `files` dict in the state with a
merging reducer, and naive Python `write_file` / `grep` / `glob` tools.

Prints a table (median ms) and, last, one JSON line.
Target (issue 10): per-write cost flat within 1.2x from the first to the thousandth file when
the writes are batched (here: 900 files / no files).
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from _common import (
    CONTENDERS,
    LABELS,
    InstantModel,
    build,
    calls,
    median,
    replies_script,
    rotations,
    run_agent,
    spec_file,
)
from langchain.agents import AgentState
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

FILES = 1_000
BATCHES = 10
SEEDED = 900
TREE = 5_000
WORD = "needle"


def _merge(left: dict[str, str] | None, right: dict[str, str] | None) -> dict[str, str]:
    return {**(left or {}), **(right or {})}


class BareFilesState(AgentState):  # type: ignore[type-arg]
    files: Annotated[dict[str, str], _merge]


@tool
def write_file(file_path: str, content: str, runtime: ToolRuntime) -> Command:  # type: ignore[type-arg]
    """Create a new file."""
    message = ToolMessage(f"wrote {file_path}", tool_call_id=runtime.tool_call_id or "")
    return Command(update={"files": {file_path: content}, "messages": [message]})


@tool
def grep(pattern: str, runtime: ToolRuntime) -> str:
    """Files whose content contains `pattern`."""
    files = runtime.state.get("files") or {}
    return "\n".join(p for p, text in files.items() if pattern in text) or "no matches"


@tool
def glob(pattern: str, runtime: ToolRuntime) -> str:
    """Files whose path matches `pattern`."""
    files = runtime.state.get("files") or {}
    return "\n".join(p for p in files if fnmatch.fnmatch(p, pattern)) or "no matches"


def disk_grep_tool(root: Path) -> BaseTool:
    @tool
    def grep(pattern: str) -> str:
        """Files under the workspace whose content contains `pattern`."""
        hits = []
        for folder, _dirs, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as handle:
                    if pattern in handle.read():
                        hits.append(path)
        return "\n".join(sorted(hits)) or "no matches"

    return grep


def content(index: int) -> str:
    marker = f" {WORD}" if index % 10 == 0 else ""
    return f"# Note {index}\n\nSome text for note {index}{marker}.\n" * 4


def write(index: int) -> tuple[str, dict[str, Any]]:
    return ("write_file", {"file_path": f"/notes/n{index:04}.md", "content": content(index)})


# --------------------------------------------------------------------------- scenarios

Reply = Callable[[], AIMessage]
DONE: Reply = lambda: AIMessage(content="done")  # noqa: E731


def batch(start: int, count: int) -> Reply:
    """One AI message asking for `count` writes, of files start .. start + count - 1."""
    return lambda: calls(*(write(i) for i in range(start, start + count)))


def batched(batches: int) -> list[Reply]:
    """`batches` AI messages sharing the 1,000 writes, then grep, glob, and a final answer."""
    size = FILES // batches
    replies = [batch(b * size, size) for b in range(batches)]
    replies.append(lambda: calls(("grep", {"pattern": WORD})))
    replies.append(lambda: calls(("glob", {"pattern": "/notes/n09*.md"})))
    return [*replies, DONE]


def per_step() -> list[Reply]:
    return [*(lambda i=i: calls(write(i)) for i in range(FILES)), DONE]


def disk_grep() -> list[Reply]:
    return [lambda: calls(("grep", {"pattern": WORD})), DONE]


def make_tree(root: Path) -> None:
    for index in range(TREE):
        folder = root / f"pkg{index % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{index}.md").write_text(content(index))


# --------------------------------------------------------------------------- running


def gaps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(stamps)]


def state_agents(model: dict[str, InstantModel], folder: Path) -> dict[str, Any]:
    """The three agents with file tools on a state backend (or, bare, in a `files` dict)."""
    spec = spec_file(folder, "files", {"backend": "state", "tools": []})
    return {
        kind: build(
            kind,
            model[kind],
            spec,
            tools=[write_file, grep, glob] if kind == "bare" else [],
            bare={"state_schema": BareFilesState},
        )
        for kind in CONTENDERS
    }


def disk_agents(model: dict[str, InstantModel], folder: Path, tree: Path) -> dict[str, Any]:
    from deepagents.backends import FilesystemBackend

    spec = spec_file(
        folder, "disk", {"backend": {"kind": "filesystem", "root_dir": str(tree)}, "tools": []}
    )
    return {
        kind: build(
            kind,
            model[kind],
            spec,
            tools=[disk_grep_tool(tree)] if kind == "bare" else [],
            deep={"backend": FilesystemBackend(root_dir=tree, virtual_mode=True)},
        )
        for kind in CONTENDERS
    }


def run(agent: Any, model: InstantModel, mode: str, files: Any = None) -> list[float]:
    message: Any = {"messages": [{"role": "user", "content": "go"}]}
    if files is not None:
        message["files"] = files
    model.stamps.clear()
    run_agent(agent, message, mode, {"recursion_limit": 10 * FILES})
    return gaps(model.stamps)


def scenario(
    results: dict[str, Any],
    name: str,
    replies: list[Reply],
    agents: dict[str, Any],
    models: dict[str, InstantModel],
    figures: Callable[[list[float]], dict[str, float]],
    repeat: int,
    mode: str,
    files: dict[str, Any] | None = None,
) -> None:
    """Run `replies` through every contender (with `files[kind]` already in the state)."""
    seen: dict[str, dict[str, list[float]]] = {k: {} for k in CONTENDERS}
    for order in rotations(repeat):
        for kind in order:
            models[kind].script = replies_script(replies)
            gaps = run(agents[kind], models[kind], mode, (files or {}).get(kind))
            for key, value in figures(gaps).items():
                seen[kind].setdefault(key, []).append(value)
    for kind in CONTENDERS:
        for key, values in seen[kind].items():
            results[f"{kind}_{mode}_{name}_{key}"] = median(values) * 1e3


def seed_files(agents: dict[str, Any], models: dict[str, InstantModel]) -> dict[str, Any]:
    """Each contender's `files` after it wrote SEEDED files (in its own format)."""
    seeded: dict[str, Any] = {}
    for kind in CONTENDERS:
        models[kind].script = replies_script([batch(FILES, SEEDED), DONE])
        message: Any = {"messages": [{"role": "user", "content": "go"}]}
        seeded[kind] = agents[kind].invoke(message)["files"]
        assert len(seeded[kind]) == SEEDED
    return seeded


def bench(repeat: int, modes: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    window = 50
    size = FILES // BATCHES
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tree = folder / "tree"
        make_tree(tree)
        models = {k: InstantModel(script=None) for k in CONTENDERS}
        state = state_agents(models, folder)
        disk = disk_agents(models, folder, tree)
        seeded = seed_files(state, models)
        for mode in modes:
            for label, files in (("empty", None), ("seeded", seeded)):
                scenario(
                    results,
                    f"batch_{label}",
                    [batch(0, size), DONE],
                    state,
                    models,
                    lambda g: {"write": g[0] / size},
                    repeat * 3,
                    mode,
                    files,
                )
            scenario(
                results,
                "one_message",
                batched(1),
                state,
                models,
                lambda g: {"write": g[0] / FILES, "grep": g[1], "glob": g[2]},
                repeat,
                mode,
            )
            scenario(
                results,
                "batches",
                batched(BATCHES),
                state,
                models,
                lambda g: {"first": g[0] / size, "last": g[BATCHES - 1] / size},
                repeat,
                mode,
            )
            scenario(
                results,
                "per_step",
                per_step(),
                state,
                models,
                lambda g: {"first": median(g[:window]), "last": median(g[-window:])},
                max(1, repeat - 1),
                mode,
            )
            scenario(
                results, "disk", disk_grep(), disk, models, lambda g: {"grep": g[0]}, repeat, mode
            )
    return results


ROWS = [
    ("batch_empty_write", "write, 100 in one message, no files yet"),
    ("batch_seeded_write", f"write, 100 in one message, {SEEDED} files"),
    ("one_message_write", "write, 1,000 in one message (per write)"),
    ("batches_first", "write, 10 x 100 in one run: first batch"),
    ("batches_last", "write, 10 x 100 in one run: tenth batch"),
    ("per_step_first", "write, one per step: first 50"),
    ("per_step_last", "write, one per step: last 50"),
    ("one_message_grep", "grep over 1,000 state files"),
    ("one_message_glob", "glob over 1,000 state files"),
    ("disk_grep", f"grep over {TREE:,} files on disk"),
]


def flatness(results: dict[str, Any], kind: str, mode: str) -> tuple[float, float]:
    """Per-write cost with SEEDED files / with none (same conversation), and tenth / first batch
    of one run (the conversation grows too)."""
    seeded = (
        results[f"{kind}_{mode}_batch_seeded_write"] / results[f"{kind}_{mode}_batch_empty_write"]
    )
    batches = results[f"{kind}_{mode}_batches_last"] / results[f"{kind}_{mode}_batches_first"]
    return seeded, batches


def table(results: dict[str, Any], modes: list[str]) -> str:
    rows = []
    for mode in modes:
        rows.append(f"{mode + ', ms':<44}" + "".join(f"{LABELS[k]:>18}" for k in CONTENDERS))
        rows[-1] += f"{'c/a':>7}{'c/b':>7}"
        for key, label in ROWS:
            a, b, c = (results[f"{k}_{mode}_{key}"] for k in CONTENDERS)
            rows.append(f"{label:<44}{a:>18.3f}{b:>18.3f}{c:>18.3f}{c / a:>7.2f}{c / b:>7.2f}")
        rows.append(f"per-write cost, {SEEDED} files / none:")
        cells = [f"{flatness(results, k, mode)[0]:>18.2f}" for k in CONTENDERS]
        rows[-1] = f"{rows[-1]:<44}" + "".join(cells)
        rows.append("per-write cost, tenth / first batch:")
        cells = [f"{flatness(results, k, mode)[1]:>18.2f}" for k in CONTENDERS]
        rows[-1] = f"{rows[-1]:<44}" + "".join(cells)
        rows.append("")
    return "\n".join(rows).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 repeat, invoke only")
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    modes = ["invoke"] if args.quick else ["invoke", "ainvoke"]
    results = bench(repeat, modes)
    print(f"file tools inside the agent loop, median of {repeat} runs")
    print(table(results, modes))
    summary: dict[str, Any] = {"bench": "files", "repeat": repeat}
    summary.update({k: round(v, 4) for k, v in results.items()})
    for mode in modes:
        for kind in CONTENDERS:
            seeded, batches = flatness(results, kind, mode)
            summary[f"flat_seeded_{kind}_{mode}"] = round(seeded, 3)
            summary[f"flat_batches_{kind}_{mode}"] = round(batches, 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
