"""`session_bootstrap`: the start of a task, each step done by the server in order
(usecases/bootstrap.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.search import MAX_BUDGET_TOKENS, check_int, check_query
from ..storage.work_input import REQUEST_ID_MAX, TITLE_MAX, opt_key, text_field
from ..usecases.bootstrap import bootstrap
from .args import WRITE, Also, Namespace, RequestId
from .caller import authorize

# The skeleton (every section's counts and cursors, the step records) fits in this.
MIN_BUDGET_TOKENS = 800


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def session_bootstrap(
        namespace: Namespace,
        query: Annotated[str | None, Field(description="The task (<= 1000 chars).")] = None,
        also: Also = None,
        budget_tokens: Annotated[int, Field(description=f"{MIN_BUDGET_TOKENS}-"
                                                        f"{MAX_BUDGET_TOKENS}.")] = 2000,
        title: Annotated[str | None, Field(description="Session title (<= 300 chars).")]
        = None,
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Start every task here, once: health, open handoffs, changes since this token's last
        bootstrap, memories due for re-checking, a memory_context pack for `query`, and a new
        session (log to it with session_append_event). steps_run says how each step went."""
        principal = authorize(namespace, write=False)
        return await bootstrap(
            rt, principal, namespace,
            query=check_query(query, required=False), also=also,
            budget_tokens=check_int(budget_tokens, "budget_tokens", MIN_BUDGET_TOKENS,
                                    MAX_BUDGET_TOKENS),
            title=None if title is None else text_field(title, "title", max_chars=TITLE_MAX),
            client_request_id=opt_key(client_request_id, "client_request_id", REQUEST_ID_MAX),
        )
