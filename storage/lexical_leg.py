"""The lexical leg: memories matching at least `need` of the query's n meaningful words, ranked
by how many they match, then ts_rank_cd. SQL in storage/sql/search.sql.

Bounded work at any size. A GIN index answers "at least k of these words" directly when the
gate is written as the OR of every k-word AND (`at_least`), so the leg reads levels of coverage
from the strictest (every word) down to `need`, each through the index, and stops as soon as it
holds `depth` memories (the leg's output) or a level overflows `candidates`: the loop is
memhub_lexical_candidates (migration 0006), one round trip for all levels. Every level read
is complete, so the memories it returns are exactly the best-covered ones; only when a level
overflows does the index's order pick which of that level's rows are scored (docs/perf.md).
Strict levels are cheap (the index skips through the rarest word's postings), so a large
namespace usually stops after a few of them, before the loose gates that match thousands.

A gate costs C(n, k) x k word tests for each row the index considers; a level above that budget
(MAX_WORD_TESTS, long queries) is skipped, and when even `need` is over it the first gate is
"at least m" for the largest affordable m < need: a superset, filtered on the exact count.

The gates are built here, not in SQL, because they are pure combinatorics over tsquery text:
the words come from memhub_query_terms (migration 0003) as PostgreSQL's own tsquery output, so
joining them with parentheses, `&` and `|` is exact and the server parses the result once.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from storage.queries import q

MAX_WORD_TESTS = 256


def at_least(terms: Sequence[str], k: int) -> str:
    """tsquery text matching a document that matches at least `k` of `terms` (1 <= k <= n)."""
    if not 1 <= k <= len(terms):
        raise ValueError(f"k={k} outside 1..{len(terms)}")
    return " | ".join(
        "( " + " & ".join(f"( {terms[i]} )" for i in keep) + " )"
        for keep in itertools.combinations(range(len(terms)), k)
    )


def _affordable(n: int, k: int) -> bool:
    return math.comb(n, k) * k <= MAX_WORD_TESTS


def coverage_levels(terms: Sequence[str], need: int) -> list[tuple[str, int]]:
    """[(gate, floor)], loosest first: rows read through `gate` count when they match at least
    `floor` terms. The first floor is `need`; the others are the affordable k above it. The
    leg reads them in reverse."""
    n = len(terms)
    if n == 0:
        return []
    need = max(1, min(need, n))
    first = need
    while first > 1 and not _affordable(n, first):
        first -= 1
    levels = [(at_least(terms, first), need)]
    levels += [(at_least(terms, k), k) for k in range(need + 1, n + 1) if _affordable(n, k)]
    return levels


async def lexical_leg(conn: Any, query: str, params: dict[str, Any], *, min_coverage: float,
                      candidates: int, rerank: int) -> list[dict[str, Any]]:
    """[{id, matched, rank}], best first, at most params["depth"]. `params`: namespace, kinds,
    tags, depth. `conn`: anything with psycopg's async `execute` returning dict rows (the
    benchmark wraps a connection to EXPLAIN each statement)."""
    cur = await conn.execute(q("search.lexical_terms"),
                             {"query": query, "min_coverage": min_coverage})
    words = await cur.fetchone()
    if words is None or not words["terms"]:
        return []  # only stopwords: nothing to match on
    levels = coverage_levels(words["terms"], words["need"])
    cur = await conn.execute(q("search.lexical"), {
        **params, "terms": words["terms"], "gates": [g for g, _ in levels],
        "floors": [f for _, f in levels], "take": candidates,
        "any_term": words["any_term"], "rerank": rerank})
    return await cur.fetchall()
