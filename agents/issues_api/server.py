"""A small issue tracker over HTTP, for the `issues` example agent (agents/issues.yaml).

    python agents/issues_api/server.py [PORT]     # default 8377; 0 picks a free port

It keeps issues in memory, answers JSON, and wants `Authorization: Bearer <ISSUES_TOKEN>`
(`demo-token` unless ISSUES_TOKEN is set). Tests start it in a thread with `serve(0)`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

SEED = [
    {"number": 1, "title": "Crash when the config file is empty", "state": "open",
     "body": "agentctl run fails with a traceback when agent.yaml is empty."},
    {"number": 2, "title": "Document the replay provider", "state": "closed",
     "body": "The README should show how to replay a cassette."},
]  # fmt: skip


class IssueTracker(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, token: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.token = token
        self.issues: list[dict[str, Any]] = [dict(i) for i in SEED]
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: IssueTracker

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.server.token}":
            return True
        self._send(401, {"error": "missing or wrong bearer token"})
        return False

    def do_GET(self) -> None:
        if not self._authorized():
            return
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        with self.server.lock:
            if parts == ["issues"]:
                state = parse_qs(url.query).get("state", ["all"])[0]
                found = [i for i in self.server.issues if state in ("all", i["state"])]
                self._send(200, [{k: i[k] for k in ("number", "title", "state")} for i in found])
                return
            if len(parts) == 2 and parts[0] == "issues" and parts[1].isdigit():
                issue = next((i for i in self.server.issues if i["number"] == int(parts[1])), None)
                if issue is None:
                    self._send(404, {"error": f"no issue {parts[1]}"})
                else:
                    self._send(200, issue)
                return
        self._send(404, {"error": f"no route {url.path}"})

    def do_POST(self) -> None:
        if not self._authorized():
            return
        if urlsplit(self.path).path != "/issues":
            self._send(404, {"error": "no route"})
            return
        try:
            value = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except ValueError:
            self._send(400, {"error": "the body is not JSON"})
            return
        if not isinstance(value, dict) or not isinstance(value.get("title"), str):
            self._send(422, {"error": "`title` (text) is required"})
            return
        with self.server.lock:
            issue = {
                "number": len(self.server.issues) + 1,
                "title": value["title"],
                "state": "open",
                "body": str(value.get("body") or ""),
            }
            self.server.issues.append(issue)
        self._send(201, issue)


def serve(port: int = 8377, token: str | None = None) -> IssueTracker:
    """Start the tracker in a background thread; `shutdown()` stops it."""
    server = IssueTracker(port, token or os.environ.get("ISSUES_TOKEN", "demo-token"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    tracker = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8377)
    print(f"issue tracker on {tracker.url}", flush=True)
    threading.Event().wait()
