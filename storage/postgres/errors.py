"""The one place psycopg errors become memhub errors.

The distinction that matters is *when* a connection died: before COMMIT was sent nothing was
committed (RETRYABLE); while COMMIT was in flight the outcome is unknown (UNKNOWN_OUTCOME), and
claiming failure there is how duplicate writes happen.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import errors as pg
from psycopg_pool import PoolTimeout

from ...errors import (
    ConfirmationRequired,
    Conflict,
    Internal,
    InvalidInput,
    MemhubError,
    QuotaExceeded,
    Retryable,
    TooLarge,
    Unavailable,
    UnknownOutcome,
)

_DISCONNECT_STATES = {"57P01", "57P02", "57P03"}
# Migration 0037's trigger: a retirement in a gated namespace without a spent confirmation.
GATE_RETIRE = "memories_gate_retire"
# Migration 0042's counters: a write that would take a namespace past its quota.
NAMESPACE_QUOTA = "namespace_quota"
_QUOTA_REMEDIES = {
    "memories": "Forget or supersede memories the namespace no longer needs (a retired memory "
                "does not count), or ask the operator to raise the quota (memhub-admin quota "
                "set, or the dashboard's namespace page).",
    "bytes": "Shorten, forget or supersede memories the namespace no longer needs (retired "
             "ones do not count; its artifacts do, until the operator purges them), or ask "
             "the operator to raise the quota (memhub-admin quota set, or the dashboard).",
}


def is_disconnect(exc: BaseException) -> bool:
    """A genuine connection loss: SQLSTATE class 08, admin/crash shutdown, or a closed socket."""
    if isinstance(exc, PoolTimeout):
        return False
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate or ""
    if state.startswith("08") or state in _DISCONNECT_STATES:
        return True
    if isinstance(exc, psycopg.OperationalError) and state == "":
        # libpq reports a dropped socket without a SQLSTATE ("server closed the connection",
        # "consuming input failed", "the connection is closed").
        return True
    return isinstance(exc, psycopg.InterfaceError)


def translate(exc: BaseException, *, committing: bool) -> MemhubError:
    """Map a driver exception to a memhub error. `committing`: COMMIT was in flight."""
    if isinstance(exc, MemhubError):
        return exc
    if isinstance(exc, PoolTimeout):
        return Unavailable("no database connection could be had in time")
    if is_disconnect(exc):
        if committing:
            return UnknownOutcome("the database connection was lost while committing")
        return Retryable("the database connection was lost before anything was committed")
    if isinstance(exc, pg.SerializationFailure | pg.DeadlockDetected | pg.LockNotAvailable):
        return Retryable("the transaction was rolled back by a concurrent one")
    if isinstance(exc, pg.QueryCanceled):
        return Retryable("the statement took too long and was cancelled")
    if isinstance(exc, pg.CheckViolation) and _constraint(exc) == GATE_RETIRE:
        return ConfirmationRequired("the intent gate is on: a memory is retired only with "
                                    "the confirmation of its preview; nothing was written")
    if isinstance(exc, pg.CheckViolation) and _constraint(exc) == NAMESPACE_QUOTA:
        return _quota_exceeded(exc)
    if isinstance(exc, pg.UniqueViolation):
        return Conflict("a unique constraint refused the write", constraint=_constraint(exc))
    if isinstance(exc, pg.CheckViolation | pg.NotNullViolation | pg.ForeignKeyViolation):
        return InvalidInput("the database refused the values", constraint=_constraint(exc))
    if isinstance(exc, pg.ProgramLimitExceeded):
        return TooLarge("a value exceeds a database limit")
    if isinstance(exc, pg.InsufficientPrivilege):
        return Internal("the database refused an operation for this role")
    if isinstance(exc, pg.RaiseException):
        return InvalidInput("the database refused the write")
    if isinstance(exc, pg.DataError):
        return InvalidInput("a value is not valid for its column")
    if isinstance(exc, psycopg.OperationalError):
        return Unavailable("the database is unavailable")
    return Internal("unexpected database error")


def _constraint(exc: psycopg.Error) -> str | None:
    diag = getattr(exc, "diag", None)
    return getattr(diag, "constraint_name", None) if diag is not None else None


def _quota_exceeded(exc: psycopg.Error) -> QuotaExceeded:
    """The refusal of migration 0042's memhub_quota_charge: its message, and its detail (JSON
    it writes: limit, max, used, adding) as the details."""
    diag = getattr(exc, "diag", None)
    try:
        details: dict[str, Any] = json.loads(getattr(diag, "message_detail", None) or "{}")
    except ValueError:
        details = {}
    limit = details.get("limit")
    return QuotaExceeded(getattr(diag, "message_primary", None) or "over the namespace's quota",
                         remedy=_QUOTA_REMEDIES.get(limit if isinstance(limit, str) else ""),
                         **details)
