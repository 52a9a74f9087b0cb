"""A loopback stand-in for the Anthropic Messages API (POST /v1/messages), for the curator
and intent-gate tier 2 tests: a real HTTP server on 127.0.0.1 answering with the documented shapes
(docs.anthropic.com: the Message object {id, type "message", role, model, content blocks
tool_use {id, name, input} / text, stop_reason, stop_sequence, usage}; errors {"type": "error",
"error": {"type", "message"}} with their status codes, and retry-after on 429 / 529).
Tests queue answers (`tool_call`, `tool_input`, `text_only`, `error`, `raw`, `slow`, `held`) and
read the requests it received (headers and JSON body)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_MAX = 60.0
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hold: threading.Event | None = None  # answered once set (or after HOLD_MAX seconds)


def message(content: list[dict[str, Any]], stop_reason: str, model: str = "fake") -> dict:
    return {"id": "msg_01FakeCurator", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 180}}


class FakeAnthropic:
    def __init__(self) -> None:
        self.queue: list[Answer] = []
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        self.queue.clear()
        self.requests.clear()

    # --- scripting ---------------------------------------------------------------------------
    def raw(self, status: int, body: Any, headers: dict[str, str] | None = None,
            delay: float = 0.0) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.queue.append(Answer(status, data, headers or {}, delay))

    def tool_call(self, operations: Any, *, stop_reason: str = "tool_use",
                  name: str = "record_curation", extra: dict | None = None) -> None:
        """The model calls the tool with {"operations": operations, **extra}."""
        block = {"type": "tool_use", "id": "toolu_01Fake", "name": name,
                 "input": {"operations": operations, **(extra or {})}}
        self.raw(200, message([block], stop_reason))

    def tool_input(self, tool_input: Any, *, name: str, stop_reason: str = "tool_use") -> None:
        """The model calls tool `name` with exactly `tool_input`."""
        block = {"type": "tool_use", "id": "toolu_01Fake", "name": name, "input": tool_input}
        self.raw(200, message([block], stop_reason))

    def held(self, tool_input: Any, *, name: str) -> threading.Event:
        """As tool_input, answered only once the returned event is set."""
        self.tool_input(tool_input, name=name)
        self.queue[-1].hold = threading.Event()
        return self.queue[-1].hold

    def text_only(self, text: str, stop_reason: str = "end_turn") -> None:
        self.raw(200, message([{"type": "text", "text": text}], stop_reason))

    def error(self, status: int, retry_after: str | None = None) -> None:
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        self.raw(status, {"type": "error", "error": {
            "type": _ERROR_TYPES.get(status, "api_error"), "message": "scripted error"}},
            headers)

    def slow(self, seconds: float) -> None:
        self.raw(200, message([], "end_turn"), delay=seconds)

    # --- the server ----------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": body})
                if self.path != "/v1/messages":
                    answer = Answer(404, json.dumps({"type": "error", "error": {
                        "type": "not_found_error", "message": "Not found"}}).encode())
                elif fake.queue:
                    answer = fake.queue.pop(0)
                else:
                    answer = Answer(500, json.dumps({"type": "error", "error": {
                        "type": "api_error", "message": "nothing scripted"}}).encode())
                time.sleep(answer.delay)
                if answer.hold is not None:
                    answer.hold.wait(HOLD_MAX)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.send_header("request-id", "req_fake")
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out first

        return Handler
