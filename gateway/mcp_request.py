"""What the MCP layer gets from HTTP, normalised first, and its guard's refusals explained.

- `/mcp/` is served as `/mcp`, in place. Starlette would answer it with a 307 to `/mcp`, built
  from the request after the token gate has taken `?token=` out of it (so a client following
  it gets a 401) and from the Host header (so behind a TLS-terminating proxy it points at
  http://). A pasted connector URL often ends in a slash.
- Header values lose surrounding spaces and tabs. RFC 9110 §5.5: a field value excludes its
  optional whitespace. uvicorn's httptools parser keeps trailing whitespace, so the MCP SDK's
  SEP-2243 check compared `Mcp-Method: tools/call ` with the body's method and refused the
  request (found by the conformance suite's http-header-validation scenario).
- fastmcp's DNS-rebinding guard refuses an unknown Host with a bare "Misdirected Request"
  (421) and an unknown browser Origin with "Forbidden Origin" (403). The usual cause is a
  deployment behind a proxy whose public name memhub was not told, so the refusal becomes
  memhub's JSON error (code FORBIDDEN, the same status) naming the setting that allows it, and
  the operator's log says so once per refused name.

`JsonRpcPrecheck`, inside the token gate and the body limit, answers two requests that the MCP
layer answers badly:
- a POST whose Content-Type is not JSON: the SDK answers a bare text 400. It gets memhub's JSON
  error (code INVALID_INPUT, HTTP 415), the shape of the gateway's other refusals of /mcp (401
  UNAUTHORIZED, 413 TOO_LARGE, 403 FORBIDDEN): no JSON-RPC message has been read yet.
- a request whose `id` is null, a fraction, a boolean, an object or an array: the SDK takes it
  for a notification (which has no id), answers 202 with no body, and the client waits forever
  for its answer. MCP requires a string or integer id; JSON-RPC 2.0 answers an invalid request
  with -32600 and id null, which it gets, with HTTP 400, as the SDK answers a message it cannot
  parse (a JSON-RPC error object: the body was read as JSON-RPC).
A body over PEEK_BYTES (an artifact upload) is handed on unparsed; anything else unexpected (not
JSON, a batch) is left to the MCP layer, whose answers are JSON-RPC errors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .. import bounded_json
from ..errors import Forbidden, InvalidInput, MemhubError
from .body_limit import peek_body, replaying
from .token_gate import send_error

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
_OWS = b" \t"
_GUARD_STATUSES = (421, 403)
_LOGGED_LIMIT = 32  # refused names logged once each, at most this many per process
# Every request but an artifact upload is well under this (a memory's 20,000 characters, each
# escaped as \uXXXX at worst, and the envelope).
PEEK_BYTES = 256 * 1024
INVALID_REQUEST = -32600


class NormaliseMcpRequest:
    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self._logged: set[tuple[int, str]] = set()

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        headers = [(name, value.strip(_OWS)) for name, value in scope.get("headers", [])]
        scope = dict(scope, path=self.path, raw_path=self.path.encode(), headers=headers)
        await self.app(scope, receive, self._explaining(scope, send))

    def _explaining(self, scope: Scope, send: Callable) -> Callable:
        """`send`, with the guard's plain-text 421 / 403 replaced by a JSON error."""
        replaced = False

        async def wrapped(message: dict[str, Any]) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and _is_guard_refusal(message):
                replaced = True
                await send_error(send, self._refusal(scope, message["status"]),
                                 status=message["status"])
                return
            if replaced:
                return  # the guard's own body
            await send(message)

        return wrapped

    def _refusal(self, scope: Scope, status: int) -> Forbidden:
        wanted = {b"host": "", b"origin": ""}
        for name, value in scope.get("headers", []):
            if name in wanted:
                wanted[name] = value.decode("latin-1")[:200]
        if status == 421:
            name, setting = wanted[b"host"], "MEMHUB_PUBLIC_URL or MEMHUB_ALLOWED_HOSTS"
            error = Forbidden(f"this server does not answer for the host {name!r}",
                              remedy=f"If {name!r} is this server's public name, set "
                                     f"{setting} to it and restart memhub.",
                              host=name)
        else:
            name, setting = wanted[b"origin"], "MEMHUB_ALLOWED_ORIGINS"
            error = Forbidden(f"requests from the browser origin {name!r} are not accepted",
                              remedy=f"If {name!r} should reach /mcp, add it to {setting} "
                                     "and restart memhub.",
                              origin=name)
        key = (status, name)
        if key not in self._logged and len(self._logged) < _LOGGED_LIMIT:
            self._logged.add(key)
            logger.warning("request refused by the DNS-rebinding guard",
                           extra={"status": status, "refused": name, "setting": setting})
        return error


def _is_guard_refusal(message: dict[str, Any]) -> bool:
    """fastmcp's guard answers with no content type (or text/plain); memhub's own errors and
    the MCP layer's answers are JSON."""
    if message.get("status") not in _GUARD_STATUSES:
        return False
    for name, value in message.get("headers", []):
        if name.lower() == b"content-type":
            return value.startswith(b"text/plain")
    return True


class JsonRpcPrecheck:
    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path") != self.path):
            await self.app(scope, receive, send)
            return
        content_type = next((value.lower() for name, value in scope.get("headers", [])
                             if name == b"content-type"), b"")
        # The SDK's own test, so that nothing it would accept is refused here.
        if not content_type.startswith(b"application/json"):
            await send_error(send, InvalidInput(
                "a POST to /mcp must carry a JSON-RPC message as 'Content-Type: "
                "application/json'",
                remedy="Send the request with the header 'Content-Type: application/json'.",
                content_type=content_type.decode("latin-1")[:100]), status=415)
            return
        read, body = await peek_body(receive, PEEK_BYTES)
        if body is not None and not valid_request_id(body):
            await _invalid_request(send)
            return
        await self.app(scope, replaying(read, receive), send)


def valid_request_id(body: bytes) -> bool:
    """False for a JSON-RPC request (a method and an id) whose id is not a string or an
    integer; True for anything else, which the MCP layer answers itself."""
    try:
        message = bounded_json.loads(body)
    except ValueError:
        return True
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return True
    request_id = message["id"]
    return isinstance(request_id, str) or (isinstance(request_id, int)
                                           and not isinstance(request_id, bool))


async def _invalid_request(send: Callable) -> None:
    error = InvalidInput("a request's id must be a string or an integer (MCP: not null)",
                         remedy="Give the request a string or integer id, unique in the "
                                "session; a notification has no id at all.", field="id")
    await send_jsonrpc_error(send, 400, INVALID_REQUEST, "Invalid Request: " + error.message,
                             error)


async def send_jsonrpc_error(send: Callable, status: int, rpc_code: int, message: str,
                             error: MemhubError, extra_headers=()) -> None:
    """A whole HTTP response whose body is a JSON-RPC error (id null: the request's was not
    read) carrying memhub's error as its `data`: the MCP SDK raises it as the request's error,
    code and remedy included, where a body of another shape would be a bare HTTP failure."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": rpc_code, "message": message, "data": error.to_payload()}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), *extra_headers]})
    await send({"type": "http.response.body", "body": body})
