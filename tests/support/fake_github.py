"""A loopback stand-in for GitHub's REST API, for the claims tests: a real HTTP server on
127.0.0.1 answering the two endpoints memhub reads with GitHub's documented shapes
(docs.github.com/rest: "Get a pull request", "Get a branch"), ETags and 304s, and its error and
rate-limit answers (403 with x-ratelimit-remaining: 0 and x-ratelimit-reset; 429 with
retry-after). Tests script it through `FakeGitHub` and read the requests it received."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

_PULL = re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)$")
_BRANCH = re.compile(r"^/repos/([^/]+/[^/]+)/branches/(.+)$")


@dataclass
class Scripted:
    """An answer that replaces the next ones for a path: status, headers, body (bytes are
    sent as they are), delay."""
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    delay: float = 0.0


class FakeGitHub:
    def __init__(self) -> None:
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.branches: dict[tuple[str, str], str] = {}
        self.scripted: dict[str, Scripted] = {}
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        self.pulls.clear()
        self.branches.clear()
        self.scripted.clear()
        self.requests.clear()

    def pull(self, repo: str, number: int, *, merged: bool,
             updated_at: str = "2026-12-01T10:00:00Z") -> None:
        self.pulls[(repo, number)] = {
            "url": f"{self.url}/repos/{repo}/pulls/{number}", "id": 1000 + number,
            "number": number, "state": "closed" if merged else "open", "title": "A change",
            "updated_at": updated_at,
            "merged": merged, "merged_at": "2026-12-01T10:00:00Z" if merged else None,
            "merge_commit_sha": "f" * 40 if merged else None,
            "head": {"ref": "feature", "sha": "e" * 40}, "base": {"ref": "main"},
        }

    def branch(self, repo: str, name: str, sha: str) -> None:
        self.branches[(repo, name)] = sha

    def _answer(self, path: str) -> tuple[int, Any]:
        if m := _PULL.match(path):
            found = self.pulls.get((m.group(1), int(m.group(2))))
        elif m := _BRANCH.match(path):
            repo, name = m.group(1), unquote(m.group(2))
            sha = self.branches.get((repo, name))
            found = None if sha is None else {
                "name": name, "protected": False,
                "commit": {"sha": sha, "url": f"{self.url}/repos/{repo}/commits/{sha}"}}
        else:
            found = None
        if found is None:
            return 404, {"message": "Not Found",
                         "documentation_url": "https://docs.github.com/rest"}
        return 200, found

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                fake.requests.append({"path": self.path, "headers": dict(self.headers)})
                scripted = fake.scripted.get(self.path)
                if scripted is not None:
                    time.sleep(scripted.delay)
                    self._send(scripted.status, scripted.body or {"message": "scripted"},
                               scripted.headers)
                    return
                status, body = fake._answer(self.path)
                data = json.dumps(body).encode()
                etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
                headers = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999",
                           "x-ratelimit-reset": str(int(time.time()) + 3600)}
                if status == 200:
                    headers["ETag"] = etag
                    if self.headers.get("If-None-Match") == etag:
                        self._send(304, None, headers)
                        return
                self._send(status, body, headers)

            def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
                data = (b"" if body is None else body if isinstance(body, bytes)
                        else json.dumps(body).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if data:
                    self.wfile.write(data)

        return Handler
