"""Retrieval tools: hybrid search and token-budgeted context.

Thin: authorize the namespace first, then hand over to the storage backend, which validates
bounds and runs every leg over stage 0 (only ACTIVE, unexpired memories are ever candidates).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.as_of import check_as_of
from ..storage.search import MODES
from ..usecases.recall import recall as recall_steps
from .args import READ, Also, AsOf, Kinds, Namespace
from .caller import authorize
from .hits import search_answer


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_search(
        namespace: Namespace,
        query: Annotated[str, Field(description="Words, an identifier or a question "
                                                "(1-1000 chars).")],
        also: Also = None,
        limit: Annotated[int, Field(description="1-100.")] = 10,
        kinds: Kinds = None,
        tags: Annotated[list[str] | None,
                        Field(description="All of these.")] = None,
        mode: Annotated[str, Field(json_schema_extra={"enum": list(MODES)})] = "hybrid",
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """Rank the project's current memories for a query, best first: search before
        deciding. Retired memories never appear (memory_history has them; as_of reads the
        past). Each hit's match says whether it answers (strong, weak, none). Modes: hybrid
        (words + meaning), lexical (exact words, identifiers), semantic. `also` finds what the
        query's own words miss.
        Errors: UNAVAILABLE (semantic without the model)."""
        principal = authorize(namespace, write=False)
        if as_of is not None:
            return search_answer(await rt.storage().search_as_of(
                principal, namespace, query, check_as_of(as_of), limit=limit, kinds=kinds,
                tags=tags, mode=mode, also=also))
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
        """Has the project recorded an answer? Call it before answering from memory; when it
        returns nothing, say you do not know. Hits answer (match strong) or may (weak: judge them).
        `also` finds answers the question's own words miss."""
        principal = authorize(namespace, write=False)
        got = await recall_steps(rt, principal, namespace, query, limit=limit, kinds=kinds,
                                 also=also)
        return search_answer(got, answered=got["answered"], rejected=got["rejected"],
                             reasons=got["reasons"], steps_run=got["steps_run"])

    @mcp.tool(annotations=READ)
    async def memory_context(
        namespace: Namespace,
        query: Annotated[str | None, Field(description="The task (<= 1000 chars).")] = None,
        also: Also = None,
        budget_tokens: Annotated[int, Field(description="1-32000.")] = 2000,
        kinds: Kinds = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """The most useful current memories for a task, packed to budget_tokens: one call
        instead of many searches. Decisions and conventions first, near-duplicates left out;
        omitted counts what did not fit. Without a query: the newest."""
        principal = authorize(namespace, write=False)
        if as_of is not None:
            return await rt.storage().context_as_of(
                principal, namespace, query, check_as_of(as_of), budget_tokens=budget_tokens,
                kinds=kinds, also=also)
        return await rt.storage().context(
            principal, namespace, query, budget_tokens=budget_tokens, kinds=kinds, also=also
        )
