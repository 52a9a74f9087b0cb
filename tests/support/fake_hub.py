"""A loopback stand-in for the Hugging Face Hub, for the model-fetch tests: a real HTTP server on
127.0.0.1 serving the files of one local directory as a model repository, with the shapes
huggingface_hub reads (huggingface.co/docs/hub/api: model info, the repository tree, and
`/{repo}/resolve/{revision}/{file}` with X-Repo-Commit and ETag). memhub reaches it through
HF_ENDPOINT, the hub client's documented mirror setting. Tests read the requests it received."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

COMMIT = "c0ffee" * 6 + "c0ff"  # 40 hex digits: the one revision the fake has
_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/[^/]+)?$")
_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/[^/]+(?:/.*)?$")
_FILE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/[^/]+/(?P<name>.+)$")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a download memhub abandoned never holds up the fake's shutdown

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-download (memhub gave up, or stopped)


class FakeHub:
    def __init__(self, repo: str, directory: Path) -> None:
        self.repo = repo
        self.files = {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}
        self.requests: list[tuple[str, str]] = []
        self.held: dict[str, threading.Event] = {}
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for gate in self.held.values():
            gate.set()
        self._server.shutdown()
        self._server.server_close()

    def hold(self, name: str) -> threading.Event:
        """Serve the first half of `name`, then wait (at most a minute) for the returned event:
        a download in progress, for as long as a test needs one."""
        self.held[name] = threading.Event()
        return self.held[name]

    def downloaded(self) -> list[str]:
        """The files fetched (GET), in order."""
        return [m.group("name") for method, path in self.requests if method == "GET"
                and (m := _FILE.match(path))]

    def _tree(self) -> list[dict[str, Any]]:
        return [{"type": "file", "path": name, "size": len(data),
                 "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
                for name, data in self.files.items()]

    def _info(self) -> dict[str, Any]:
        return {"id": self.repo, "modelId": self.repo, "sha": COMMIT, "private": False,
                "siblings": [{"rfilename": name} for name in self.files]}

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _serve(self, body: bool) -> None:
                path = unquote(urlsplit(self.path).path)
                hub.requests.append((self.command, path))
                if (m := _TREE.match(path)) and m.group("repo") == hub.repo:
                    return self._json(hub._tree())
                if (m := _INFO.match(path)) and m.group("repo") == hub.repo:
                    return self._json(hub._info())
                m = _FILE.match(path)
                if m is None or m.group("repo") != hub.repo or m.group("name") not in hub.files:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                data = hub.files[m.group("name")]
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not body:
                    return None
                gate = hub.held.get(m.group("name"))
                if gate is not None:
                    half = len(data) // 2
                    self.wfile.write(data[:half])
                    self.wfile.flush()
                    gate.wait(60)
                    data = data[half:]
                self.wfile.write(data)
                return None

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve(body=True)

            def do_HEAD(self) -> None:
                self._serve(body=False)

        return Handler
