"""Retrieval tools: hybrid search and token-budgeted context.

Thin: authorize the namespace first, then hand over to the storage backend, which validates
bounds and runs every leg over stage 0 (only ACTIVE, unexpired memories are ever candidates).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.search import MODES
from ..usecases.recall import recall as recall_steps
from .args import READ, Also, Kinds, Namespace
from .caller import authorize
from .hits import search_answer


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_search(
        namespace: Namespace,
        query: Annotated[str, Field(description="What you are looking for (1-1000 chars): "
                                                "words, an identifier or a question.")],
        also: Also = None,
        limit: Annotated[int, Field(description="1-100.")] = 10,
        kinds: Kinds = None,
        tags: Annotated[list[str] | None,
                        Field(description="Only memories carrying ALL of these tags.")] = None,
        mode: Annotated[str, Field(json_schema_extra={"enum": list(MODES)})] = "hybrid",
    ) -> dict[str, Any]:
        """Rank the project's CURRENT memories for a query, best first; use it before deciding
        anything the project may already have decided. Retired memories never appear
        (memory_history has them).

        mode: hybrid (words + meaning), lexical (exact words, identifiers) or semantic.
        Returns {"results": [{"id", "kind", "revision", "text", "by", "updated_at", "match",
        "found_by", ...}], "degraded" (only when the model is not loaded: words only)}. Always
        ranks: match says whether a result answers (strong), may (weak) or does not (none).
        Errors: INVALID_INPUT, FORBIDDEN, UNAVAILABLE (semantic without the model).
        """
        principal = authorize(namespace, write=False)
        return search_answer(await rt.storage().search(
            principal, namespace, query, limit=limit, kinds=kinds, tags=tags, mode=mode,
            also=also))

    @mcp.tool(annotations=READ)
    async def recall(
        namespace: Namespace,
        query: Annotated[str, Field(description="The question (1-1000 chars).")],
        also: Also = None,
        limit: Annotated[int, Field(description="1-100.")] = 10,
        kinds: Kinds = None,
    ) -> dict[str, Any]:
        """Whether the project has recorded an answer: use it before answering from memory,
        and say you do not know when it returns nothing. Returns only the memories that answer
        (match strong) or may (weak: read them and judge), as memory_search shows them, with
        "answered" (false: nothing recorded matches), "rejected" (of the best `limit`),
        "reasons" and steps_run (search, guard: status, ms). Errors: INVALID_INPUT,
        FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        got = await recall_steps(rt, principal, namespace, query, limit=limit, kinds=kinds,
                                 also=also)
        return search_answer(got, answered=got["answered"], rejected=got["rejected"],
                             reasons=got["reasons"], steps_run=got["steps_run"])

    @mcp.tool(annotations=READ)
    async def memory_context(
        namespace: Namespace,
        query: Annotated[str | None, Field(description="The task at hand (up to 1000 chars); "
                                                       "omit for the newest memories.")] = None,
        also: Also = None,
        budget_tokens: Annotated[int, Field(description="Token budget (1-32000).")] = 2000,
        kinds: Kinds = None,
    ) -> dict[str, Any]:
        """Load the project's most useful current memories in one call, packed to fit a token
        budget: call it at the start of a task instead of many searches. The best match (or,
        without a query, the newest memory) is always in when it fits; then decisions and
        conventions come first, near-duplicates are left out.

        Returns {"memories": [{"id", "kind", "revision", "text"}] (text = title and content),
        "tokens_used" (never above budget_tokens; counted with the cl100k BPE over the JSON
        of "memories"), "budget_tokens", "omitted" (relevant memories that did not fit),
        "rejected" (candidates that are no real match for the query, left out; with a query
        nothing matches, "memories" is empty: call again without one for the newest),
        "degraded"}. Errors: INVALID_INPUT (bounds), FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().context(
            principal, namespace, query, budget_tokens=budget_tokens, kinds=kinds, also=also
        )
