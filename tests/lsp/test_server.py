"""`agentctl lsp` through a real LSP client (pytest-lsp) over stdio: one server for the module."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import run_cli

DATA = Path(__file__).parent / "data"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "runner", "lsp"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    lsp_client.diagnostics = Published()
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(), initialization_options={"debounce": 0}
        )
    )
    yield
    await lsp_client.shutdown_session()


def uri(name: str) -> str:
    return (DATA / name).as_uri()


async def open_file(client: LanguageClient, name: str, text: str | None = None) -> str:
    """Open `name` (with `text` as its unsaved buffer) and wait for its diagnostics."""
    target = uri(name)
    text = (DATA / name).read_text(encoding="utf-8") if text is None else text
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(target, "yaml", 1, text))
    )
    await published(client, target)
    return target


class Published(dict[str, Any]):
    """`client.diagnostics`, also queuing each publication by file, so that none is missed
    between two waits (a check publishes several files at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.queues: dict[str, asyncio.Queue[list[lsp.Diagnostic]]] = {}

    def __setitem__(self, uri: str, diagnostics: Any) -> None:
        super().__setitem__(uri, diagnostics)
        self.queues.setdefault(uri, asyncio.Queue()).put_nowait(list(diagnostics))


async def published(client: LanguageClient, target: str) -> list[lsp.Diagnostic]:
    """The next diagnostics published for `target`."""
    assert isinstance(client.diagnostics, Published)
    queue = client.diagnostics.queues.setdefault(target, asyncio.Queue())
    return await asyncio.wait_for(queue.get(), 30)


async def close(client: LanguageClient, target: str) -> None:
    """Close `target`, and wait for its diagnostics to be cleared."""
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(target))
    )
    assert await published(client, target) == []


def validate_json(name: str) -> list[dict[str, object]]:
    done = run_cli("validate", "--json", str(DATA / name))
    return [json.loads(line) for line in done.stdout.splitlines()]


async def test_three_mistakes_are_the_three_problems_validate_reports(
    client: LanguageClient,
) -> None:
    target = await open_file(client, "three.yaml")
    got = sorted(
        (d.range.start.line + 1, d.range.start.character + 1, d.message)
        for d in client.diagnostics[target]
    )
    expected = sorted(
        (p["line"], p["col"], f"{p['path']}: {p['message']}") for p in validate_json("three.yaml")
    )
    assert len(expected) == 3
    assert got == expected
    modle = next(d for d in client.diagnostics[target] if d.message.startswith("modle"))
    assert (modle.range.start.line, modle.range.start.character, modle.range.end.character) == (
        3,
        0,
        5,
    )
    await close(client, target)


async def test_a_typo_is_fixed_by_its_code_action(client: LanguageClient) -> None:
    target = await open_file(client, "three.yaml")
    diagnostics = client.diagnostics[target]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(target),
            lsp.Range(lsp.Position(3, 0), lsp.Position(3, 5)),
            lsp.CodeActionContext(diagnostics=diagnostics),
        )
    )
    titles = sorted(a.title for a in actions or [] if isinstance(a, lsp.CodeAction))
    assert titles == ["Change to 'model'", "Change to 'read_file'"]
    fix = next(a for a in actions or [] if isinstance(a, lsp.CodeAction) and "model" in a.title)
    assert fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[target]
    assert edit.new_text == "model"
    assert edit.range == lsp.Range(lsp.Position(3, 0), lsp.Position(3, 5))
    await close(client, target)


async def test_an_unsaved_buffer_is_checked_and_a_fix_clears_it(client: LanguageClient) -> None:
    text = (DATA / "good.yaml").read_text(encoding="utf-8")
    target = await open_file(
        client, "good.yaml", text.replace("write_file: true", "writ_file: true")
    )
    (diagnostic,) = client.diagnostics[target]
    assert diagnostic.message == (
        "interrupt_on.writ_file: no tool named 'writ_file' in agent 'good'; did you mean 'write_file'?"
    )
    assert diagnostic.range.start.line == 10
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=2, uri=target),
            [lsp.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    assert await published(client, target) == []
    await close(client, target)


async def test_a_tool_name_is_completed_in_interrupt_on(client: LanguageClient) -> None:
    text = (DATA / "good.yaml").read_text(encoding="utf-8")
    target = await open_file(client, "good.yaml")
    typing = text.replace("  write_file: true\n", "  write_file: true\n  loo\n")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=2, uri=target),
            [lsp.TextDocumentContentChangeWholeDocument(typing)],
        )
    )
    (half_typed,) = await published(client, target)
    assert half_typed.message.startswith("YAML syntax error")
    line = typing.splitlines().index("  loo")
    result = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(target), lsp.Position(line, 5))
    )
    assert isinstance(result, lsp.CompletionList)
    labels = {item.label for item in result.items}
    assert {"lookup", "write_file", "read_file", "task"} <= labels
    assert "model" not in labels  # tool names, not keys
    await close(client, target)


async def test_keys_values_files_and_template_names_are_completed(
    client: LanguageClient,
) -> None:
    target = await open_file(client, "good.yaml")

    async def labels(line: int, character: int) -> set[str]:
        result = await client.text_document_completion_async(
            lsp.CompletionParams(lsp.TextDocumentIdentifier(target), lsp.Position(line, character))
        )
        assert isinstance(result, lsp.CompletionList)
        return {item.label for item in result.items}

    assert {"interrupt_on", "subagents", "skills"} <= await labels(0, 0)  # a key at the top
    assert "helper.yaml" in await labels(12, 9)  # after `  - ref: `
    assert {"openai:", "anthropic:"} <= await labels(3, 7)  # after `model: `
    await close(client, target)
    target = await open_file(client, "prompt.md.yaml", "prompt: Hi {{ vars.")
    assert await labels(0, 19) == set()  # no vars here
    await close(client, target)
    text = "version: 1\nname: t\nvars: {topic: x}\nprompt: About {{ vars.to"
    target = await open_file(client, "t.yaml", text)
    assert await labels(3, len("prompt: About {{ vars.to")) == {"vars.topic"}
    await close(client, target)


async def test_a_key_is_hovered_with_its_schema_description(client: LanguageClient) -> None:
    target = await open_file(client, "good.yaml")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(target), lsp.Position(9, 3))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert hover.contents.value.startswith("**interrupt_on**\n\nTool name to `true`")
    tool = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(target), lsp.Position(10, 4))
    )
    assert tool is not None and isinstance(tool.contents, lsp.MarkupContent)
    assert "built in" in tool.contents.value
    await close(client, target)


async def test_definition_jumps_through_ref_prompt_file_and_import(
    client: LanguageClient,
) -> None:
    target = await open_file(client, "good.yaml")

    async def jump(line: int, character: int) -> tuple[str, int]:
        found = await client.text_document_definition_async(
            lsp.DefinitionParams(lsp.TextDocumentIdentifier(target), lsp.Position(line, character))
        )
        assert isinstance(found, lsp.Location)
        return found.uri, found.range.start.line

    assert await jump(12, 12) == (uri("helper.yaml"), 0)  # `ref: helper.yaml`
    assert await jump(4, 16) == (uri("prompt.md"), 0)  # `prompt: {file: prompt.md}`
    assert await jump(8, 16) == (uri("tools.py"), 0)  # `import: ./tools.py:lookup`
    await close(client, target)


async def test_a_problem_in_an_included_file_shows_there_and_on_the_include_line(
    client: LanguageClient,
) -> None:
    target = await open_file(client, "inc.yaml")
    (fragment,) = client.diagnostics[uri("_frag.yaml")]
    assert fragment.message == "todos: expected true or false, found text 'maybe'"
    assert (fragment.range.start.line, fragment.range.start.character) == (1, 7)
    (on_include,) = client.diagnostics[target]
    assert on_include.range.start == lsp.Position(2, 10)
    shown = validate_json("inc.yaml")[0]
    assert on_include.message.endswith(f":2:8: todos: {shown['message']}")
    await close(client, target)


async def test_a_cassette_and_a_test_file(client: LanguageClient) -> None:
    cassette = await open_file(client, "good.cassette.yaml")
    assert list(client.diagnostics[cassette]) == []
    result = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(cassette), lsp.Position(6, 58))
    )
    assert isinstance(result, lsp.CompletionList)
    assert {"good", "helper"} <= {item.label for item in result.items}
    await close(client, cassette)
    text = (DATA / "good.test.yaml").read_text(encoding="utf-8")
    test = await open_file(client, "good.test.yaml", text.replace("turns:", "turn:"))
    messages = [d.message for d in client.diagnostics[test]]
    assert any(m.startswith("cases[0].turn: unknown key") for m in messages)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(test))
    )
    cases = next(s for s in symbols or [] if s.name == "cases")
    assert isinstance(cases, lsp.DocumentSymbol)
    assert [c.name for c in cases.children or []] == ["asks the helper"]
    await close(client, test)


async def test_a_file_changed_on_disk_rechecks_the_files_reading_it(
    client: LanguageClient, tmp_path: Path
) -> None:
    fragment = tmp_path / "_shared.yaml"
    fragment.write_text("todos: maybe\n", encoding="utf-8")
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: a\ninclude: [_shared.yaml]\nprompt: Hi.\n", encoding="utf-8")
    target = agent.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(target, "yaml", 1, agent.read_text(encoding="utf-8"))
        )
    )
    (on_include,) = await published(client, target)
    assert on_include.range.start.line == 1
    fragment.write_text("todos: false\n", encoding="utf-8")
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(fragment.as_uri(), lsp.FileChangeType.Changed)]
        )
    )
    assert await published(client, target) == []
    await close(client, target)


WORKFLOW = """\
name: wf
state:
  draft: {type: string}
agents:
  writer: {model: openai:gpt-4.1, prompt: You write.}
workflow:
  steps:
    - {id: draft, agent: writr, input: "{{ state.draft }}", output: draft}
    - id: fan
      parallel:
        - {id: one, agent: writer, input: x}
        - {id: two, agent: writer, input: x}
"""


async def test_a_workflow_is_checked_completed_and_outlined(client: LanguageClient) -> None:
    target = await open_file(client, "wf.yaml", WORKFLOW)
    got = [(d.range.start.line + 1, d.message) for d in client.diagnostics[target]]
    assert got == [
        (8, "workflow.steps[0].agent: no agent named 'writr' in `agents:`; did you mean 'writer'?")
    ]
    result = await client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(target), lsp.Position(0, 0))
    )
    assert isinstance(result, lsp.CompletionList)
    labels = {item.label for item in result.items}
    assert {"state", "agents", "workflow"} <= labels
    assert "subagents" not in labels  # an agent file's key
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(target))
    )
    workflow = next(s for s in symbols or [] if s.name == "workflow")
    assert isinstance(workflow, lsp.DocumentSymbol)
    steps = workflow.children or []
    assert [(s.name, s.detail, s.range.start.line) for s in steps] == [
        ("draft", "agent", 7),
        ("fan", "parallel", 8),
    ]
    assert [c.name for c in steps[1].children or []] == ["one", "two"]
    await close(client, target)
