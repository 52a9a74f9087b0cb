"""The one place memhub errors become MCP tool errors.

A `MemhubError` reaches the client as a ToolError whose text is a JSON object
`{"code", "message", "remedy", "details"?}`. Anything else is logged with its traceback and
masked as INTERNAL, so no driver message or stack ever leaks to a client.
"""

from __future__ import annotations

import json
import logging

from fastmcp.exceptions import DisabledError, NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import Middleware

from ..errors import Internal, InvalidInput, MemhubError, NotFound

logger = logging.getLogger(__name__)


def tool_error(err: MemhubError) -> ToolError:
    return ToolError(json.dumps(err.to_payload(), default=str))


def error_code(err: ToolError) -> str:
    """The code a client reads in a ToolError made by `tool_error` (INTERNAL for any other)."""
    try:
        code = json.loads(str(err)).get("code")
    except (ValueError, AttributeError):
        return Internal.code
    return code if isinstance(code, str) else Internal.code


class ErrorMapping(Middleware):
    async def on_call_tool(self, context, call_next):
        try:
            return await call_next(context)
        except MemhubError as err:
            if isinstance(err, Internal):
                logger.error("internal error in tool", exc_info=err)
            raise tool_error(err) from err
        except ToolError as err:
            # fastmcp masks a tool's exception into ToolError("Error calling tool ...") before
            # middleware sees it; the MemhubError is its cause. Restore our payload.
            cause = err.__cause__
            if isinstance(cause, MemhubError):
                if isinstance(cause, Internal):
                    logger.error("internal error in tool", exc_info=cause)
                raise tool_error(cause) from cause
            raise
        except (NotFoundError, DisabledError) as exc:
            # A tool name this server does not offer: the caller's mistake (a stale tool list,
            # a typo), answered like any other error, not logged as ours.
            tool = str(getattr(context.message, "name", "?"))[:64]
            raise tool_error(NotFound(
                f"no tool named {tool!r}",
                remedy="tools/list shows the tools this server offers.",
                tool=tool,
            )) from exc
        except ValidationError as exc:
            # The framework refused the arguments against the tool's schema (wrong types,
            # missing required ones): the caller's mistake, not ours.
            fields = _invalid_fields(exc)
            raise tool_error(InvalidInput(
                "the arguments do not match the tool's input schema (wrong type or missing)"
                + (f": {', '.join(fields)}" if fields else ""),
                fields=fields,
            )) from exc
        except Exception as exc:
            tool = getattr(context.message, "name", "?")
            logger.exception("unexpected error in tool", extra={"tool": tool})
            raise tool_error(Internal("unexpected server error; it has been logged")) from exc


def _invalid_fields(exc: Exception) -> list[str]:
    """The argument names pydantic refused (never their values, which may be large or secret)."""
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return []
    names = []
    for error in errors():
        loc = [str(part) for part in error.get("loc", ()) if not isinstance(part, int)]
        if loc:
            names.append(".".join(loc)[:64])
    return sorted(set(names))[:20]
