"""The Anthropic Messages API, for the curator: one POST {base}/v1/messages that forces a call
of the curation tool, read back as that tool's input.

Every failure is an answer, never an exception: `Reply.tool_input` is None with `reason`
(rate_limited with retry_after, overloaded, api_error, http_<status>, timeout, network_error,
too_large, malformed_response, truncated, refused, no_tool_call), and the curator applies
nothing. The key is sent only in the x-api-key header; it is never logged nor returned.
Nothing retries here: a rate limit or an overload is reported (with retry-after) so the caller
runs the curation again later; re-running is idempotent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import bounded_json
from ..config import Settings

logger = logging.getLogger(__name__)

API_VERSION = "2023-06-01"
MAX_BODY = 2 * 1024 * 1024  # a message of up to 32k output tokens is well under this
_ERRORS = {429: "rate_limited", 529: "overloaded"}


@dataclass
class Reply:
    """The forced tool call's input, or None with why nothing is applied."""
    tool_input: Any = None
    reason: str | None = None
    status: int | None = None
    retry_after: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds <= 86400 else None


def read_message(message: Any, tool_name: str) -> Reply:
    """The tool input of a Messages API message object, or why there is none."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return Reply(reason="malformed_response")
    raw_usage = message.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    stop = message.get("stop_reason")
    if stop == "max_tokens":  # a cut-off tool input is not a smaller valid one
        return Reply(reason="truncated", usage=usage)
    if stop == "refusal":
        return Reply(reason="refused", usage=usage)
    calls = [b for b in message["content"]
             if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == tool_name]
    if len(calls) != 1 or stop != "tool_use":
        return Reply(reason="no_tool_call", usage=usage)
    return Reply(tool_input=calls[0].get("input"), usage=usage)


class AnthropicClient:
    """The curator's settings, unless a use case with tighter bounds of its own (the intent
    gate's tier 2) passes `timeout` and `max_tokens`."""

    def __init__(self, settings: Settings, *, timeout: float | None = None,
                 max_tokens: int | None = None) -> None:
        self.url = settings.anthropic_base_url.rstrip("/") + "/v1/messages"
        self.model = settings.curator_model
        self._key = settings.anthropic_api_key
        self._max_tokens = max_tokens or settings.curator_max_output_tokens
        self._timeout = timeout or settings.curator_timeout_seconds

    @property
    def configured(self) -> bool:
        return self._key is not None and bool(self._key.get_secret_value())

    async def force_tool(self, system: str, user: str, tool: dict[str, Any]) -> Reply:
        """Ask the model, forcing a call of `tool`; never raises for the service's failures."""
        if self._key is None:
            return Reply(reason="not_configured")
        body = {
            "model": self.model, "max_tokens": self._max_tokens, "system": system,
            "messages": [{"role": "user", "content": user}],
            "tools": [tool], "tool_choice": {"type": "tool", "name": tool["name"]},
        }
        headers = {"x-api-key": self._key.get_secret_value(), "anthropic-version": API_VERSION,
                   "content-type": "application/json"}
        try:
            async with httpx.AsyncClient(timeout=self._timeout) as http:
                async with http.stream("POST", self.url, json=body, headers=headers) as resp:
                    raw = bytearray()
                    async for chunk in resp.aiter_bytes():
                        raw += chunk
                        if len(raw) > MAX_BODY:
                            return Reply(reason="too_large", status=resp.status_code)
        except httpx.TimeoutException:
            return self._failed("timeout")
        except httpx.HTTPError as exc:
            return self._failed("network_error", type(exc).__name__)
        if resp.status_code != 200:
            reason = _ERRORS.get(resp.status_code) or (
                "api_error" if resp.status_code >= 500 else f"http_{resp.status_code}")
            reply = Reply(reason=reason, status=resp.status_code,
                          retry_after=_retry_after(resp.headers))
            logger.warning("curator model call failed", extra={
                "status": resp.status_code, "reason": reason})
            return reply
        try:
            message = bounded_json.loads(bytes(raw))
        except ValueError:
            return Reply(reason="malformed_response", status=200)
        reply = read_message(message, tool["name"])
        reply.status = 200
        return reply

    def _failed(self, reason: str, detail: str | None = None) -> Reply:
        logger.warning("curator model call failed", extra={"reason": reason, "detail": detail})
        return Reply(reason=reason)
