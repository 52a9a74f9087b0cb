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
from .args import READ, Kinds, Namespace
from .caller import authorize


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_search(
        namespace: Namespace,
        query: Annotated[str, Field(description="What you are looking for (1-1000 chars): "
                                                "words, an identifier (a file or module name "
                                                "finds its full path too), or a question.")],
        limit: Annotated[int, Field(description="At most this many results (1-100).")] = 10,
        kinds: Kinds = None,
        tags: Annotated[list[str] | None,
                        Field(description="Only memories carrying ALL of these tags.")] = None,
        mode: Annotated[str, Field(json_schema_extra={"enum": list(MODES)})] = "hybrid",
    ) -> dict[str, Any]:
        """Search the project's CURRENT memories; use it before deciding anything the project
        may already have decided. Superseded, deleted and expired memories are never returned
        (read those with memory_history).

        mode: "hybrid" (default: keywords + meaning, fused by rank), "lexical" (exact words and
        identifiers) or "semantic" (meaning only). Returns {"results": [{"memory", "score",
        "why": {"lexical_rank", "semantic_rank", "distance", "coverage"}, "match": {"admitted",
        "reason", "evidence"}}], "mode", "degraded"}; best first. Results are ranked even when
        none answers the query: match.admitted=false marks those that are not real matches
        (recall returns only the admitted ones). An empty list means nothing relevant is
        recorded. degraded=true: the embedding model is
        not loaded, so hybrid ran keywords only. Errors: INVALID_INPUT (bounds), FORBIDDEN,
        UNAVAILABLE (mode "semantic" while the model is not ready).
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().search(
            principal, namespace, query, limit=limit, kinds=kinds, tags=tags, mode=mode
        )

    @mcp.tool(annotations=READ)
    async def recall(
        namespace: Namespace,
        query: Annotated[str, Field(description="The question (1-1000 chars).")],
        limit: Annotated[int, Field(description="At most this many results (1-100).")] = 10,
        kinds: Kinds = None,
    ) -> dict[str, Any]:
        """Ask whether the project has recorded an answer: use it before answering from memory,
        and say you do not know when it returns nothing. Unlike memory_search, which always
        ranks something, it returns only the current memories that really match (a close
        meaning, or most of the question's words; and not far weaker than the best match).

        Returns {"results": [{"memory", "score", "why", "match"}] (admitted only, best first),
        "answered" (false: nothing recorded matches), "rejected" (how many of the best `limit`
        it left out), "reasons" ({"no_match" | "far_from_best": count}), "degraded" (true:
        the embedding model is not loaded, so only words count)}. Errors: INVALID_INPUT
        (bounds), FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().recall(principal, namespace, query, limit=limit, kinds=kinds)

    @mcp.tool(annotations=READ)
    async def memory_context(
        namespace: Namespace,
        query: Annotated[str | None, Field(description="The task at hand (up to 1000 chars); "
                                                       "omit for the newest memories.")] = None,
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
            principal, namespace, query, budget_tokens=budget_tokens, kinds=kinds
        )
