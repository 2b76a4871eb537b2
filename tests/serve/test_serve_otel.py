"""`agentctl serve --otel`: each run on the server is a trace, read back from an OTLP/HTTP
receiver on localhost (the spans are flushed when the server stops)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tests.otlp import Receiver, received_spans, receiver  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

AGENTCTL = str(Path(sys.executable).with_name("agentctl"))


def test_serve_otel_traces_each_run(tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    from runner.serve.ports import free_port

    (tmp_path / "greeter.yaml").write_text(
        "name: greeter\ndescription: Says hello\nmodel: replay:greeter.cassette.yaml\n"
        "prompt: You greet.\n"
    )
    (tmp_path / "greeter.cassette.yaml").write_text("- content: Hello there.\n")
    port = free_port("127.0.0.1")
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces"
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "false",
        "DATABASE_URL": "",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
    }
    proc = subprocess.Popen(
        [AGENTCTL, "serve", ".", "--port", str(port), "--dev", "--otel"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a wait limit for a loaded machine, not a measurement
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("agentctl serve did not start")
                time.sleep(0.2)
        client = get_sync_client(url=url)
        thread = client.threads.create()["thread_id"]
        state = client.runs.wait(
            thread, "greeter", input={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert state["messages"][-1]["content"] == "Hello there."
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    spans = received_spans(receiver)
    (root,) = [s for s in spans.values() if not s.parent_span_id]
    assert root.name == "invoke_agent greeter"
    assert root.attributes["gen_ai.conversation.id"] == thread
    (chat,) = [s for s in spans.values() if s.parent_span_id == root.span_id]
    assert chat.name == "chat replay"
    assert chat.attributes["gen_ai.usage.output_tokens"] > 0
