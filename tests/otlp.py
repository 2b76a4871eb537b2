"""A real OTLP/HTTP trace receiver on 127.0.0.1 for tests: decodes what exporters send with the
OpenTelemetry protobuf definitions (`opentelemetry-proto`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class Receiver(ThreadingHTTPServer):
    """Keeps each ExportTraceServiceRequest received, and the path it came to."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.paths: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)
        self.server.paths.append(self.path)
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class ReceivedSpan:
    name: str
    span_id: bytes
    parent_span_id: bytes
    trace_id: bytes
    attributes: dict[str, Any]
    resource: dict[str, Any]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    value = getattr(any_value, kind)
    if kind == "array_value":
        return [_value(v) for v in value.values]
    return value


def received_spans(receiver: Receiver, scope: str = "agentctl") -> dict[bytes, ReceivedSpan]:
    """The spans of instrumentation `scope` received, by span id."""
    found: dict[bytes, ReceivedSpan] = {}
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                if scope_spans.scope.name != scope:
                    continue
                for span in scope_spans.spans:
                    found[span.span_id] = ReceivedSpan(
                        span.name,
                        span.span_id,
                        span.parent_span_id,
                        span.trace_id,
                        {a.key: _value(a.value) for a in span.attributes},
                        resource,
                    )
    return found
