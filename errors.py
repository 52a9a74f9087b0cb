"""One error hierarchy. Every error a caller can act on has a stable code and a remedy.

Codes are the contract (tests assert them); messages are for people and may change.
Translation into MCP tool errors and HTTP responses happens in `to_payload` only.
"""

from __future__ import annotations

from typing import Any


class MemhubError(Exception):
    code = "INTERNAL"
    http_status = 500
    remedy = "Retry later; if it persists, report it with the server log's request id."

    def __init__(self, message: str, *, remedy: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if remedy is not None:
            self.remedy = remedy
        self.details = details

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "remedy": self.remedy,
        }
        if self.details:
            payload["details"] = self.details
        return payload


class InvalidInput(MemhubError):
    code = "INVALID_INPUT"
    http_status = 400
    remedy = "Fix the argument named in the message and call again."


class NotFound(MemhubError):
    code = "NOT_FOUND"
    http_status = 404
    remedy = "Check the id or key and the namespace; list first if unsure."


class Conflict(MemhubError):
    code = "CONFLICT"
    http_status = 409
    remedy = "Re-read the current state and decide again."


class CursorExpired(MemhubError):
    code = "CURSOR_EXPIRED"
    http_status = 410
    remedy = (
        "The changes after this cursor are no longer kept (MEMHUB_CHANGE_FEED_RETENTION_DAYS): "
        "re-read what you need in full (memory_list, handoff_list, session_list), then follow "
        "the feed again: memory_changes without a cursor starts at the oldest change kept."
    )


class IdempotencyMismatch(MemhubError):
    code = "IDEMPOTENCY_MISMATCH"
    http_status = 409
    remedy = "A client_request_id names one request; use a new id for a different payload."


class Forbidden(MemhubError):
    code = "FORBIDDEN"
    http_status = 403
    remedy = "Use a token whose scope includes this namespace (and write access for writes)."


class ToolNotInProfile(MemhubError):
    code = "TOOL_NOT_IN_PROFILE"
    http_status = 403
    remedy = (
        "This token's tool profile does not include the tool: use one of the tools tools/list "
        "shows, or a token with tool profile 'full' (memhub-admin token create --tool-profile "
        "full, or the dashboard)."
    )


class Unauthorized(MemhubError):
    code = "UNAUTHORIZED"
    http_status = 401
    remedy = "Send a valid token as 'Authorization: Bearer <token>' or '?token=<token>'."


class TooLarge(MemhubError):
    code = "TOO_LARGE"
    http_status = 413
    remedy = "Send less data; the limit is in the message."


class Retryable(MemhubError):
    code = "RETRYABLE"
    http_status = 503
    remedy = "Nothing was committed; it is safe to retry the same call."


class UnknownOutcome(MemhubError):
    code = "UNKNOWN_OUTCOME"
    http_status = 503
    remedy = (
        "The connection died during COMMIT: the write may or may not have happened. Replay the "
        "same client_request_id (safe) or re-read before writing again; do not assume it failed."
    )


class Unavailable(MemhubError):
    code = "UNAVAILABLE"
    http_status = 503
    remedy = "The database is unreachable; retry after a short wait."


class Internal(MemhubError):
    code = "INTERNAL"
    http_status = 500


class RateLimited(MemhubError):
    code = "RATE_LIMITED"
    http_status = 429
    remedy = (
        "Too many requests with invalid tokens came from this address: wait the seconds in the "
        "Retry-After header (and details.retry_after_seconds), then retry with a valid token."
    )


class UnsupportedFormat(MemhubError):
    code = "UNSUPPORTED_FORMAT"
    http_status = 400
    remedy = "Use a memhub that reads this file's format version, or export the data again."


class ConfirmationInvalid(MemhubError):
    code = "CONFIRMATION_INVALID"
    http_status = 400
    remedy = ("The confirmation is not one this server issued for this namespace and token: "
              "call again without `confirmation` to get a fresh preview and token.")


class ConfirmationMismatch(MemhubError):
    code = "CONFIRMATION_MISMATCH"
    http_status = 409
    remedy = ("A confirmation applies exactly the arguments it was issued for: send them "
              "unchanged, or call without `confirmation` to preview the new ones.")


class ConfirmationExpired(MemhubError):
    code = "CONFIRMATION_EXPIRED"
    http_status = 410
    remedy = ("The confirmation is past MEMHUB_GATE_CONFIRM_TTL_SECONDS: call again without "
              "`confirmation`, re-read the preview (things may have changed), then confirm.")


class ConfirmationUsed(MemhubError):
    code = "CONFIRMATION_USED"
    http_status = 409
    remedy = ("A confirmation is single use and this one was already spent: re-read the "
              "memory; call again without `confirmation` for a new preview if still needed.")


class ConfirmationRequired(MemhubError):
    code = "CONFIRMATION_REQUIRED"
    http_status = 409
    remedy = ("The namespace's intent gate is on: a supersede or forget is applied only with the "
              "confirmation of its preview. Call memory_remember (with supersedes) or "
              "memory_forget without `confirmation` to get the preview, then call again with it.")


class QuotaExceeded(MemhubError):
    code = "QUOTA_EXCEEDED"
    http_status = 409
    remedy = "The namespace holds as many of these as it may; the limit is in the message."


# The one command that gives memhub an embedding model on a machine it cannot fetch one from.
MODEL_IMPORT_COMMAND = "memhub-admin model import PATH"


class ModelAbsent(MemhubError):
    """No embedding model on disk and none fetched: search runs on keywords only."""

    code = "MODEL_ABSENT"
    http_status = 503
    remedy = (
        f"Run `{MODEL_IMPORT_COMMAND}`, PATH a directory holding the ONNX export of "
        "all-MiniLM-L6-v2; a running memhub picks it up within seconds. Or start memhub once "
        "where huggingface.co (or an HF_ENDPOINT mirror) is reachable, MEMHUB_EMBED_OFFLINE "
        "unset: it fetches the model itself."
    )


class ModelInvalid(MemhubError):
    """A directory offered as the embedding model is not a usable copy of it."""

    code = "MODEL_INVALID"
    http_status = 400
    remedy = (
        "Give a directory holding the ONNX export of all-MiniLM-L6-v2 (model.onnx, "
        "tokenizer.json, tokenizer_config.json, config.json, special_tokens_map.json), as "
        "fastembed downloads it from Qdrant/all-MiniLM-L6-v2-onnx."
    )


class NoDatabase(MemhubError):
    """memhub-admin found no memhub database where the settings point."""

    code = "NO_DATABASE"
    http_status = 404
    remedy = (
        "Set MEMHUB_DATA_DIR or DATABASE_URL to the server's database; `memhub-admin migrate` "
        "creates a new one where they point."
    )
