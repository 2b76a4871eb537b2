"""OpenTelemetry traces of runs: the span tree, GenAI attributes, content only when asked, no
secrets; and one run of `agentctl run --otel` read back from a real OTLP/HTTP receiver."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runner.run import Decision, Session, telemetry
from runner.run.tracing_wanted import requested
from tests.conftest import run_cli
from tests.otlp import Receiver, received_spans, receiver  # noqa: F401 (a fixture)

SECRET = "sk-test-0123456789abcdef"

LEAD = """\
version: 1
name: lead
description: Splits work between two helpers
model: replay:lead.cassette.yaml
prompt: You lead a small team. Your service key is ${OTEL_TEST_API_KEY}.
subagents:
  - name: helper
    description: Writes notes
    prompt: You write notes.
  - name: checker
    description: Checks notes
    prompt: You check notes.
interrupt_on:
  edit_file: true
"""

CASSETTE = """\
version: 1
agents:
  lead:
    - content: Two jobs at once.
      tool_calls:
        - {id: call_helper, name: task, args: {subagent_type: helper, description: Write /a.md}}
        - {id: call_checker, name: task, args: {subagent_type: checker, description: Write /b.md}}
    - content: Reading a file that is not there.
      tool_calls:
        - {id: call_missing, name: read_file, args: {file_path: /missing.md}}
    - content: Done; both notes are written.
  helper:
    - content: Writing.
      tool_calls:
        - {id: call_a, name: write_file, args: {file_path: /a.md, content: alpha}}
    - content: Wrote /a.md.
  checker:
    - content: Writing.
      tool_calls:
        - {id: call_b, name: write_file, args: {file_path: /b.md, content: beta}}
    - content: Wrote /b.md.
"""


@pytest.fixture
def lead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OTEL_TEST_API_KEY", SECRET)
    monkeypatch.setenv("AGENTCTL_HOME", str(tmp_path / "home"))
    (tmp_path / "lead.yaml").write_text(LEAD)
    (tmp_path / "lead.cassette.yaml").write_text(CASSETTE)
    return tmp_path / "lead.yaml"


def traced_run(spec: Path, *, content: bool) -> tuple[list[Any], str]:
    exporter = InMemorySpanExporter()
    active = telemetry.enable(exporter=exporter, batch=False, content=content)
    try:
        with Session(spec) as session:
            result = session.run("Write the two notes")
    finally:
        active.shutdown()
    assert result.final is not None, result.events
    return list(exporter.get_finished_spans()), result.thread_id


class Tree:
    """Spans by id, with their children in start order."""

    def __init__(self, spans: list[Any]) -> None:
        self.spans = spans
        self.by_id = {s.context.span_id: s for s in spans}

    def roots(self) -> list[Any]:
        return [s for s in self.spans if s.parent is None]

    def children(self, span: Any) -> list[Any]:
        found = [
            s
            for s in self.spans
            if s.parent is not None and s.parent.span_id == span.context.span_id
        ]
        return sorted(found, key=lambda s: s.start_time)

    def one(self, name: str) -> Any:
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]

    def shape(self, span: Any) -> Any:
        kids = self.children(span)
        return {span.name: [self.shape(k) for k in kids]} if kids else span.name


def test_a_run_is_one_trace_of_nested_spans(lead: Path) -> None:
    spans, thread_id = traced_run(lead, content=False)
    tree = Tree(spans)
    assert len({s.context.trace_id for s in spans}) == 1
    (root,) = tree.roots()
    assert root.name == "invoke_agent lead"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "lead"
    assert root.attributes["gen_ai.conversation.id"] == thread_id

    top = [tree.shape(k) for k in tree.children(root)]
    assert top[0] == "chat replay"
    tasks = [k for k in tree.children(root) if k.name == "execute_tool task"]
    assert sorted(t.attributes["gen_ai.tool.call.id"] for t in tasks) == [
        "call_checker",
        "call_helper",
    ]
    # each parallel subagent's own calls sit under its own `task` span, not the other's
    for task in tasks:
        (agent,) = tree.children(task)
        name = "helper" if task.attributes["gen_ai.tool.call.id"] == "call_helper" else "checker"
        assert agent.name == f"invoke_agent {name}"
        assert agent.attributes["gen_ai.agent.name"] == name
        assert tree.shape(agent) == {
            f"invoke_agent {name}": ["chat replay", "execute_tool write_file", "chat replay"]
        }
    assert [k.name for k in tree.children(root)][-3:] == [
        "chat replay",
        "execute_tool read_file",
        "chat replay",
    ]


def test_spans_carry_the_genai_attributes(lead: Path) -> None:
    from opentelemetry.trace import SpanKind, StatusCode

    spans, _ = traced_run(lead, content=False)
    tree = Tree(spans)
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 7  # lead 3, helper 2, checker 2
    for chat in chats:
        assert chat.kind == SpanKind.CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "replay"
        assert chat.attributes["gen_ai.response.model"] == "lead.cassette.yaml"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    write = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "call_a")
    assert write.attributes["gen_ai.operation.name"] == "execute_tool"
    assert write.attributes["gen_ai.tool.name"] == "write_file"
    assert write.status.status_code == StatusCode.UNSET
    missing = tree.one("execute_tool read_file")
    assert missing.attributes["gen_ai.tool.call.id"] == "call_missing"
    assert missing.attributes["error.type"] == "tool_error"
    assert missing.status.status_code == StatusCode.ERROR
    assert missing.status.description == "tool_error"  # the message quotes payloads: content only


CONTENT_KEYS = {
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def all_values(spans: list[Any]) -> str:
    return json.dumps([dict(s.attributes) for s in spans] + [s.status.description for s in spans])


def test_no_content_unless_asked(lead: Path) -> None:
    spans, _ = traced_run(lead, content=False)
    assert not CONTENT_KEYS & {k for s in spans for k in s.attributes}
    text = all_values(spans)
    assert "alpha" not in text and "Write the two notes" not in text
    assert SECRET not in text


def test_content_when_asked_and_secrets_masked(lead: Path) -> None:
    spans, _ = traced_run(lead, content=True)
    tree = Tree(spans)
    text = all_values(spans)
    assert SECRET not in text
    first = min((s for s in spans if s.name.startswith("chat ")), key=lambda s: s.start_time)
    system = json.loads(first.attributes["gen_ai.system_instructions"])
    assert "Your service key is ***." in system[0]["content"]
    messages = json.loads(first.attributes["gen_ai.input.messages"])
    assert messages == [
        {"role": "user", "parts": [{"type": "text", "content": "Write the two notes"}]}
    ]
    output = json.loads(first.attributes["gen_ai.output.messages"])
    assert output[0]["role"] == "assistant"
    assert [p["id"] for p in output[0]["parts"] if p["type"] == "tool_call"] == [
        "call_helper",
        "call_checker",
    ]
    write = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "call_a")
    assert json.loads(write.attributes["gen_ai.tool.call.arguments"]) == {
        "file_path": "/a.md",
        "content": "alpha",
    }
    assert "/a.md" in write.attributes["gen_ai.tool.call.result"]
    missing = tree.one("execute_tool read_file")
    assert "missing.md" in missing.status.description
    # the agent spans hold what was asked and what came back
    (root,) = tree.roots()
    assert json.loads(root.attributes["gen_ai.input.messages"]) == messages
    assert json.loads(root.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Done; both notes are written."}],
        }
    ]
    helper = tree.one("invoke_agent helper")
    assert json.loads(helper.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == (
        "Write /a.md"
    )
    assert "Wrote /a.md." in helper.attributes["gen_ai.output.messages"]


def test_a_subagent_waiting_for_approval_is_not_an_error(tmp_path: Path, lead: Path) -> None:
    (tmp_path / "lead.cassette.yaml").write_text(
        CASSETTE.replace(
            "{id: call_b, name: write_file, args: {file_path: /b.md, content: beta}}",
            "{id: call_b, name: write_file, args: {file_path: /b.md, content: beta}}\n"
            "    - content: Fixing.\n"
            "      tool_calls:\n"
            "        - {id: call_fix, name: edit_file, args: "
            "{file_path: /b.md, old_string: beta, new_string: gamma}}",
        )
    )
    exporter = InMemorySpanExporter()
    active = telemetry.enable(exporter=exporter, batch=False)
    try:
        with Session(lead) as session:
            first = session.run("Write the two notes")
            assert first.interrupt is not None, first.events
            second = session.run(thread_id=first.thread_id, decisions=[Decision("approve")])
            assert second.final is not None, second.events
    finally:
        active.shutdown()
    spans = list(exporter.get_finished_spans())
    assert len({s.context.trace_id for s in spans}) == 2  # one trace per turn
    paused = [s for s in spans if s.attributes.get("agentctl.interrupted")]
    assert sorted(s.name for s in paused) == [
        "execute_tool task",
        "invoke_agent checker",
        "invoke_agent lead",
    ]
    assert {s.context.trace_id for s in paused} == {paused[0].context.trace_id}  # the first turn
    assert not any("error.type" in s.attributes for s in paused)


def test_tracing_off_adds_nothing_to_runs(lead: Path) -> None:
    from langchain_core.tracers.context import _configure_hooks

    before = list(_configure_hooks)
    active = telemetry.enable(exporter=InMemorySpanExporter(), batch=False)
    assert len(_configure_hooks) == len(before) + 1
    active.shutdown()
    assert _configure_hooks == before


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        (False, {}, False),
        (True, {}, True),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        (False, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}, True),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, False),
        (True, {"OTEL_SDK_DISABLED": "true"}, False),
        (False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "TRUE"}, False),
        (True, {"OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_when_tracing_is_on(flag: bool, env: dict[str, str], expected: bool) -> None:
    assert requested(flag, env) is expected


def test_masker_hides_interpolated_and_key_like_values() -> None:
    from runner.load.source import interpolate

    env = {"MY_DB": "postgres://u:hunter22@db/x", "OPENAI_API_KEY": "sk-live-abcdefgh", "N": "1"}
    assert interpolate("${MY_DB}", env) == "postgres://u:hunter22@db/x"
    mask = telemetry.Masker(env)
    assert mask("url postgres://u:hunter22@db/x key sk-live-abcdefgh n 1") == "url *** key *** n 1"


# --------------------------------------------------------------------------- the CLI


def test_otel_without_the_extra_is_a_clear_error(
    lead: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(lead), "hi", "--otel"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "error: OpenTelemetry tracing needs the `otel` extra (opentelemetry.sdk.trace is not "
        "installed): pip install 'agentctl[otel]'\n"
    )


def test_an_endpoint_variable_without_the_extra_warns_and_runs(
    lead: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from runner.cli import main

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert main(["run", str(lead), "Write the two notes", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("warning: no traces: OpenTelemetry tracing needs the `otel`")
    assert "Done; both notes are written." in captured.out


def test_otel_content_needs_tracing(lead: Path) -> None:
    result = run_cli("run", str(lead), "hi", "--otel-content", env={"OTEL_SDK_DISABLED": "true"})
    assert result.returncode == 2
    assert "--otel-content adds content to traces: add --otel" in result.stderr


def test_agentctl_run_otel_sends_the_trace_over_otlp_http(
    lead: Path,
    receiver: Receiver,  # noqa: F811
    tmp_path: Path,
) -> None:
    port = receiver.server_address[1]
    result = run_cli(
        "run",
        str(lead),
        "Write the two notes",
        "--otel",
        "--output",
        "jsonl",
        cwd=tmp_path,
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_SERVICE_NAME": ""},
    )
    assert result.returncode == 0, result.stderr
    thread_id = json.loads(result.stdout.splitlines()[0])["thread_id"]
    assert set(receiver.paths) == {"/v1/traces"}
    by_id = received_spans(receiver)
    spans = list(by_id.values())
    assert {s.resource["service.name"] for s in spans} == {"agentctl"}
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "invoke_agent lead"
    assert root.attributes["gen_ai.conversation.id"] == thread_id
    assert {s.trace_id for s in spans} == {root.trace_id}

    def path(span: Any) -> list[str]:
        names = [span.name]
        while span.parent_span_id:
            span = by_id[span.parent_span_id]
            names.append(span.name)
        return names[::-1]

    write_a = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "call_a")
    assert path(write_a) == [
        "invoke_agent lead",
        "execute_tool task",
        "invoke_agent helper",
        "execute_tool write_file",
    ]
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 7
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)
    assert SECRET not in str(receiver.requests)


def test_agentctl_test_traces_each_case_when_the_endpoint_variable_is_set(
    lead: Path,
    receiver: Receiver,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "lead.test.yaml").write_text(
        "version: 1\nagent: ./lead.yaml\ncases:\n"
        "  - {name: one, input: Write the two notes, expect: {final: {contains: Done}}}\n"
        "  - {name: two, input: Write them again, expect: {final: {contains: Done}}}\n"
    )
    port = receiver.server_address[1]
    result = run_cli(
        "test",
        "lead.test.yaml",
        "-j",
        "2",
        cwd=tmp_path,
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},  # no --otel
    )
    assert result.returncode == 0, result.stdout + result.stderr
    spans = list(received_spans(receiver).values())
    roots = [s for s in spans if not s.parent_span_id]
    assert [s.name for s in roots] == ["invoke_agent lead"] * 2
    assert len({s.trace_id for s in roots}) == 2
    assert len({s.attributes["gen_ai.conversation.id"] for s in roots}) == 2
    assert len([s for s in spans if s.name == "invoke_agent helper"]) == 2


def test_an_unreachable_collector_costs_one_warning_not_the_run(lead: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result = run_cli(
        "run",
        str(lead),
        "Write the two notes",
        "--otel",
        "--quiet",
        cwd=tmp_path,
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done; both notes are written.\n"
    otel_lines = [line for line in result.stderr.splitlines() if "OpenTelemetry" in line]
    assert otel_lines[0].startswith("warning: OpenTelemetry: ")
    assert otel_lines[-1] == "warning: OpenTelemetry: the last spans were not sent within 3 s"
    assert len(otel_lines) == 2, result.stderr
    assert "Traceback" not in result.stderr


def test_a_trace_continues_on_the_host_of_a_remote_subagent() -> None:
    """The `task` call's span goes out as `traceparent` (`trace_headers`), and a run whose
    metadata carries it (a served run, given it by the caller) starts under that span."""
    from uuid import uuid4

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    caller = telemetry.SpanRecorder(provider.get_tracer("caller"))
    callee = telemetry.SpanRecorder(provider.get_tracer("callee"))

    root, tool, remote = uuid4(), uuid4(), uuid4()
    caller.on_chain_start({}, {}, run_id=root, name="parent")
    caller.on_tool_start({"name": "task"}, "", run_id=tool, parent_run_id=root)
    headers = caller.trace_headers(tool)
    assert set(headers) == {"traceparent"}
    callee.on_chain_start({}, {}, run_id=remote, name="child", metadata=headers)
    callee.on_chain_end({}, run_id=remote)
    caller.on_tool_end("done", run_id=tool)
    caller.on_chain_end({}, run_id=root)

    spans = {s.name: s for s in exporter.get_finished_spans()}
    task, child = spans["execute_tool task"], spans["invoke_agent child"]
    assert child.parent is not None and child.parent.span_id == task.context.span_id
    assert (
        child.context.trace_id
        == task.context.trace_id
        == spans["invoke_agent parent"].context.trace_id
    )
    assert caller.trace_headers(uuid4()) == {}  # a run it does not know: nothing to send
