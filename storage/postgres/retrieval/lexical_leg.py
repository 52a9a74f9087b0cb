"""The lexical leg: BM25 over the memories holding the query's rare words, and over the best
covered ones for its common words.

Ranking. ts_rank and ts_rank_cd ignore how common a word is, so a memory matching "cache" and
"policy" tied with one matching "redis" and "eviction". BM25 (search.lexical in storage/sql)
weights each word by its inverse document frequency in the namespace (postgres/lexicon.py keeps
the counts) and saturates repeated words. A memory must still hold at least `need` of the
query's words (the coverage floor: LEXICAL_MIN_COVERAGE of them, at most LEXICAL_MAX_NEED, in
storage/postgres/retrieval/search.py).

Bounded work at any size. Scoring every memory that holds any query word would read all the
postings of every common word. The words are split by their document frequencies:
- rare: the rarest words whose frequencies add up to at most `candidates`. Every memory
  holding any of them is a candidate: one GIN index read whose size depends on how rare the
  words are, not on the namespace's size. BM25 ranks these highest. When a memory must hold
  two or more words (`need`), the index is asked for the memories holding a rare word and
  `need - 1` others (rare_gate): one holding a rare word alone would be read, scored and
  then dropped by the floor.
- common: the others (all of them when even the rarest is in more than `candidates`
  memories: reading it whole would not be bounded, and cutting it would be arbitrary).
  Memories holding none of the rare words must hold `need` of these; they are read as
  coverage levels, strictest first (every common word, all but one, ...), each an index
  gate "at least k of these words" written as the OR of every k-word AND, and reading
  stops once the levels hold the leg's depth or `candidates` distinct rows (the plpgsql loop
  memhub_lexical_candidates, migrations 0006, 0008 and 0009, one round trip). Strict levels
  are cheap (the index intersects postings), so a large namespace usually stops after a few of
  them; only an overflowing level is cut in index order. The strictest level itself is read
  only if the next one overflows: its memories are all in that one (0009), and when it is read
  the levels may bring up to 2 x `candidates` rows. A middle level is
  read in two parts, the memories holding the rarest common word (the anchor) first: the
  index walks only the anchor's postings for that part, and it holds the level's best BM25
  candidates, so the leg often stops there (0008). A gate costs C(n, k) x k word tests per
  row the index considers; levels above MAX_WORD_TESTS are skipped (when even `need` is, the
  first gate is the largest affordable "at least m": a superset, filtered on the exact
  count).
All candidates are scored in the same statement and filtered on the floor. Without statistics
yet (a namespace's first seconds) every word counts as in one memory, so all are rare.

The gates are built here, not in SQL: the words come from memhub_query_terms (migrations 0003
and 0010: each spelling by its English form, which every memory holding the written form also
holds) as PostgreSQL's own tsquery output, so joining them with parentheses, `&` and `|` is
exact. The index holds each lexeme per namespace and without positions (migration 0011), so
the gates and the rare words are written in its form (index_form): every lexeme prefixed by the
namespace's key, every phrase replaced by lexemes it cannot hold without. That form finds a
superset of the exact words' memories; each row it finds is tested with the exact words
(`matched`, and the rare branch's own test) before it counts.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from typing import Any

from ..queries import q

MAX_WORD_TESTS = 256

# PostgreSQL's tsquery output: a lexeme is quoted, with '' for a quote inside it; a phrase is
# lexemes joined by <-> or <N>.
_LEXEME = r"'(?:[^']|'')*'"
_PHRASE_OP = r"<(?:-|\d+)>"
_PHRASE = re.compile(rf"{_LEXEME}(?:\s*{_PHRASE_OP}\s*{_LEXEME})+")
_LEXEME_OR_OP = re.compile(rf"({_LEXEME})|{_PHRASE_OP}")


def index_form(term: str, key: str) -> str:
    """`term` (tsquery text) as the namespaced-lexeme index (migration 0011) answers it: each
    lexeme prefixed by `key`, each phrase by a lexeme or AND of lexemes every match of it holds.
    A superset of what `term` matches: the index has no positions.

    A hyphenated word ("write-ahead": 'write-ahead' <-> 'write' <-> 'ahead') is looked up by its
    compound lexeme alone, which the parser indexes beside the parts and which is the rarest of
    them; any other phrase by all its lexemes."""
    def phrase(match: re.Match) -> str:
        members = re.findall(_LEXEME, match.group(0))
        compound = [m for m in members if "-" in m]
        return "( " + " & ".join(compound[:1] or members) + " )"

    def lexeme_or_op(match: re.Match) -> str:
        if match.group(1) is None:
            return "&"  # a phrase operator left next to parentheses: AND is still a superset
        return _namespaced(match.group(1), key)

    return _LEXEME_OR_OP.sub(lexeme_or_op, _PHRASE.sub(phrase, term))


def _namespaced(quoted: str, key: str) -> str:
    """A lexeme as PostgreSQL quotes it in tsquery text, as the index holds it: after `key`."""
    return "'" + key + quoted[1:]


def rarest(df: Sequence[float], budget: int) -> list[int]:
    """Indices of the rarest words whose document frequencies add up to at most `budget`, in
    query order; none when even the rarest is over it."""
    order = sorted(range(len(df)), key=lambda i: (df[i], i))
    picked: list[int] = []
    total = 0.0
    for i in order:
        if total + df[i] > budget:
            break
        picked.append(i)
        total += df[i]
    return sorted(picked)


def any_of(terms: Sequence[str]) -> str:
    return " | ".join(f"( {t} )" for t in terms)


def any_lexeme(term: str, key: str) -> str:
    """tsquery text matching a memory (in the namespaced-lexeme index) that holds any lexeme of
    `term`: how the leg's `matched` counts a word (search.lexical), looser than the term itself
    (a part of a phrase counts)."""
    return " | ".join(_namespaced(m, key) for m in re.findall(_LEXEME, term))


def rare_gate(indexed: Sequence[str], loose: Sequence[str], rare: Sequence[int],
              need: int) -> str:
    """tsquery text for the rare branch's index read: the memories holding any of the `rare`
    terms (indices; `indexed`, their index form) and, when `need` > 1, at least `need - 1` of
    the other terms as `matched` counts them (`loose`, any_lexeme). The floor (`matched >=
    need`) drops any other memory after it was read and scored, so the candidates that can be
    returned are the same; at 1k-10k memories, where most of a query's words are rare, this
    reads a few dozen rows instead of hundreds (docs/performance.md). A gate over MAX_WORD_TESTS
    word tests per row (long queries) stays the plain OR of the rare terms."""
    plain = any_of([indexed[i] for i in rare])
    others = len(indexed) - 1
    if need <= 1 or others < need - 1 or not all(loose):
        return plain
    if len(rare) * (1 + math.comb(others, need - 1) * (need - 1)) > MAX_WORD_TESTS:
        return plain

    def with_others(i: int) -> str:
        return at_least([t for j, t in enumerate(loose) if j != i], need - 1)

    return " | ".join(f"( ( {indexed[i]} ) & ( {with_others(i)} ) )" for i in rare)


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


def coverage_levels(terms: Sequence[str], need: int,
                    anchor: int | None = None) -> list[tuple[str, int]]:
    """[(gate, floor)], loosest first: rows read through `gate` count when they match at least
    `floor` of `terms`. The first floor is `need`; the others are the affordable k above it.
    The leg reads them in reverse. No levels when fewer than `need` terms.

    `anchor` (the index of the rarest term) splits each middle level k (need < k < n) in two:
    the anchor and k-1 of the others, read first, then k of the others (migration 0008)."""
    n = len(terms)
    if n == 0 or need > n:
        return []
    need = max(1, need)
    first = need
    while first > 1 and not _affordable(n, first):
        first -= 1
    levels = [(at_least(terms, first), need)]
    rest = [t for i, t in enumerate(terms) if i != anchor]
    for k in range(need + 1, n + 1):
        if not _affordable(n, k):
            continue
        if anchor is None or k == n:
            levels.append((at_least(terms, k), k))
        else:
            # Loosest first, so the anchored half (read first) goes last.
            levels.append((at_least(rest, k), k))
            levels.append((f"( {terms[anchor]} ) & ( {at_least(rest, k - 1)} )", k))
    return levels


async def lexical_leg(conn: Any, query: str, params: dict[str, Any], *, min_coverage: float,
                      max_need: int, candidates: int, primary: str | None = None,
                      questions: bool = False) -> tuple[list[dict[str, Any]],
                                                        list[dict[str, Any]]]:
    """([{id, matched, rank, coverage}] of the memories' own words, [{id, matched, coverage,
    covered}] of their questions' (0040; [] unless `questions`)), each best first and at most
    params["depth"]. `coverage` is the share of the question's summed IDF that the memory's
    matched words carry: `primary`, the caller's own words when `query` also holds other
    phrasings of it (their words after its own: storage/search.Ask.words), else all of
    `query`. `params`: namespace, kinds, tags, depth. `conn`: anything with psycopg's async
    `execute` returning dict rows (the benchmark wraps a connection to EXPLAIN each
    statement)."""
    cur = await conn.execute(q("search.lexical_terms"), {
        "query": query, "min_coverage": min_coverage, "max_need": max_need,
        "namespace": params["namespace"], "primary": primary if primary is not None else query})
    words = await cur.fetchone()
    if words is None or not words["terms"]:
        return [], []  # only stopwords: nothing to match on
    terms, need = words["terms"], words["need"]
    indexed = [index_form(t, words["key"]) for t in terms]
    df = words["df"]
    rare = rarest(df, candidates)
    common_at = [i for i in range(len(terms)) if i not in rare]
    common = [terms[i] for i in common_at]
    anchor = min(range(len(common)), key=lambda j: (df[common_at[j]], j)) if common else None
    levels = coverage_levels([indexed[i] for i in common_at], need, anchor)
    idf = words["idf"]
    primary_terms = max(1, words["primary_terms"] or len(terms))
    scoring = {"need": need, "lexemes": words["lexemes"], "term_of": words["term_of"],
               "idf": idf, "primary_terms": primary_terms,
               "idf_primary": sum(idf[:primary_terms]) or 1.0}
    cur = await conn.execute(q("search.lexical"), {
        **params, **scoring, "rare": any_of([terms[i] for i in rare]) if rare else None,
        "rare_index": rare_gate(indexed, [any_lexeme(t, words["key"]) for t in terms], rare,
                                need) if rare else None,
        "common": common,
        "gates": [g for g, _ in levels], "floors": [f for _, f in levels],
        "take": candidates, "avg_length": words["avg_length"]},
        prepare=False)  # unnamed: planned for these words (postgres/search.search_gucs)
    own = await cur.fetchall()
    if not questions:
        return own, []
    cur = await conn.execute(q("search.lexical_questions"), {
        **params, **scoring, "take": candidates,
        "any_index": " | ".join(any_lexeme(t, words["key"]) for t in terms)},
        prepare=False)
    return own, await cur.fetchall()
