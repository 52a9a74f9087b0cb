"""The lexical leg at scale (migrations 0006, 0007 and 0011,
storage/postgres/retrieval/lexical_leg.py).

Under RLS a query's own condition can only become an index condition if its function is
LEAKPROOF; `tsvector @@ tsquery` is not, out of the box, so without 0006 every keyword search
tested @@ on every row of the namespace (400 ms at 100k memories; docs/performance.md). These tests
plan the exact statements the server runs, as memhub_app under a namespace scope, and require
the namespaced-lexeme index (search_ns_tsv, 0011) in the plan; then they run the leg itself and
check its answer against a brute-force reading of its rule on the same rows, with room for
every candidate and with a cap far below the number that qualify, and check BM25's use of the
namespace's own word statistics; and they check the index's form of the words (a superset, in
its own namespace only, the exact words deciding) and that the column never refuses a write.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence

import psycopg
import pytest
from psycopg.rows import dict_row

from memhub.storage.postgres.queries import q
from memhub.storage.postgres.retrieval.lexical_leg import (
    any_lexeme,
    any_of,
    at_least,
    index_form,
    lexical_leg,
    rare_gate,
    rarest,
)
from memhub.storage.postgres.retrieval.search import (
    LEXICAL_CANDIDATES,
    LEXICAL_MAX_NEED,
    LEXICAL_MIN_COVERAGE,
    search_gucs,
)
from tests.support.plans import nodes

NS, OTHER = "big-proj", "other-proj"
WORDS = ["ledger", "webhook", "redis", "kafka", "invoice", "tenant", "canary", "nightly"]


@pytest.fixture
def corpus(db_conn):
    # Rows straight into the table as the owner: 3,000 here and 3,000 in another namespace
    # (one transaction: each memory must mirror its revision by COMMIT).
    with db_conn.transaction():
        _insert(db_conn)
    db_conn.execute("ANALYZE memories")
    # What storage/postgres/retrieval/lexicon.py does within seconds of the writes.
    for ns in (NS, OTHER):
        db_conn.execute("SELECT memhub_refresh_lexicon(%s)", [ns])
    return db_conn


def _insert(db_conn) -> None:
    for ns in (NS, OTHER):
        db_conn.execute(
            """
            INSERT INTO memories (namespace, kind, title, content, tags, content_hash,
                                  author_client)
            SELECT %(ns)s, 'FACT', 'note ' || i,
                   (%(w)s::text[])[1 + i %% 8] || ' ' || (%(w)s::text[])[1 + (i / 8) %% 8] || ' '
                     || (%(w)s::text[])[1 + (i / 64) %% 8] || ' item ' || i,
                   '{}', decode(md5(%(ns)s || i), 'hex'), 'test'
              FROM generate_series(1, 3000) AS i
            """,
            {"ns": ns, "w": WORDS},
        )
    db_conn.execute(
        "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
        " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
        " FROM memories")


def _insert_memories(db_conn, rows: list[tuple[str, str, str, list[str]]]) -> None:
    """(namespace, title, content, tags) rows straight into the table as the owner, each with
    its revision (one transaction: each memory must mirror its revision by COMMIT)."""
    with db_conn.transaction():
        for i, (ns, title, content, tags) in enumerate(rows):
            db_conn.execute(
                "INSERT INTO memories (namespace, kind, title, content, tags, content_hash,"
                " author_client) VALUES (%s, 'FACT', %s, %s, %s, decode(md5(%s), 'hex'),"
                " 'test')", [ns, title, content, tags, f"{ns}-{i}"])
        db_conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_revisions r"
            " WHERE r.memory_id = m.id)")


def _scope(namespace: str = NS):
    return [("SELECT set_config('memhub.namespaces', %s, true)", [namespace])] + [
        ("SELECT set_config(%s, %s, true)", [name, value])       # as the server's search
        for name, value in search_gucs(100).items()]              # transactions do


def _leg(db_dsn: str, query: str, *, candidates: int = LEXICAL_CANDIDATES, depth: int = 50,
         min_coverage: float = LEXICAL_MIN_COVERAGE, max_need: int = LEXICAL_MAX_NEED,
         plans: list | None = None, warm_up: Sequence[str] = (), analyze: bool = False):
    """Run the leg as memhub_app, the way SearchStore does: (rows, need). With `plans`, the
    plan of every statement it runs, nested ones included (auto_explain), is appended there,
    executed (with the rows each node returned) when `analyze`.
    `warm_up`: queries run first on the same connection, as a pooled one would have."""
    async def run():
        async with await psycopg.AsyncConnection.connect(db_dsn, row_factory=dict_row) as conn:
            await conn.execute("SET ROLE memhub_app")
            for text in warm_up:
                async with conn.transaction():
                    for sql, args in _scope():
                        await conn.execute(sql, args)
                    await lexical_leg(
                        conn, text, {"namespace": NS, "kinds": None, "tags": None,
                                     "depth": depth},
                        min_coverage=min_coverage, max_need=max_need, candidates=candidates)
            if plans is not None:
                conn.add_notice_handler(lambda d: plans.append(d.message_primary))
                await conn.execute("RESET ROLE")  # loading auto_explain takes a superuser
                await conn.execute("LOAD 'auto_explain'")
                for name, value in {**AUTO_EXPLAIN, **(ANALYZED if analyze else {})}.items():
                    await conn.execute("SELECT set_config(%s, %s, false)", [name, value])
                await conn.execute("SET ROLE memhub_app")
            async with conn.transaction():
                for sql, args in _scope():
                    await conn.execute(sql, args)
                rows, _ = await lexical_leg(
                    conn, query, {"namespace": NS, "kinds": None, "tags": None, "depth": depth},
                    min_coverage=min_coverage, max_need=max_need, candidates=candidates)
                cur = await conn.execute(q("search.lexical_terms"),
                                         {"query": query, "min_coverage": min_coverage,
                                          "max_need": max_need, "namespace": NS,
                                          "primary": query})
                return rows, (await cur.fetchone())["need"]
    return asyncio.run(run())


AUTO_EXPLAIN = {"auto_explain.log_format": "json", "auto_explain.log_nested_statements": "on",
                "auto_explain.log_min_duration": "0", "auto_explain.log_level": "notice",
                "client_min_messages": "notice"}
ANALYZED = {"auto_explain.log_analyze": "on", "auto_explain.log_timing": "off"}


# Other queries first, on the same connection: more than the 5 runs after which psycopg
# prepares a statement and PostgreSQL may switch a prepared statement to a generic plan, made
# without the words. Searches leave plan_cache_mode alone
# (storage/postgres/retrieval/search.search_gucs), so the plans of the statements whose words decide
# the plan must still be made for the words.
WARM_UP = ["ledger webhook", "tenant nightly", "redis ledger canary", "kafka invoice",
           "webhook canary tenant", "nightly ledger", "invoice redis"]


@pytest.mark.parametrize("warm_up", [(), WARM_UP], ids=["first", "after-7"])
@pytest.mark.parametrize("candidates", [LEXICAL_CANDIDATES, 30])
def test_the_lexical_leg_uses_its_gin_index_under_rls(corpus, db_dsn, candidates, warm_up):
    """With room for 1,000 candidates two of the words are rare enough to be read whole; with
    room for 30 none is, and the coverage levels (nested statements) do all the reading."""
    plans: list[str] = []
    rows, _ = _leg(db_dsn, "redis kafka canary", plans=plans, candidates=candidates,
                   warm_up=warm_up)
    assert rows
    bodies = [text.split("plan:", 1)[1].strip() for text in plans if "plan:" in text]
    read = [node for body in bodies if body.startswith("{")
            for node in nodes(json.loads(body)["Plan"])]
    # Every read of memories goes through the index with the words as its condition; none
    # tests @@ as a filter on every row of the namespace. (A candidate looked up by its id may
    # test @@ on that one row, and the rows the index found are tested with the exact words.)
    filtered = [n for n in read if n.get("Relation Name") == "memories"
                and "@@" in n.get("Filter", "") and "(id = " not in n.get("Index Cond", "")
                and "search_ns_tsv" not in n.get("Recheck Cond", "")]
    assert not filtered, [(n.get("Node Type"), n.get("Index Cond"), n.get("Recheck Cond"))
                          for n in filtered]
    indexed = [n for n in read if n.get("Index Name") == "memories_ns_lexemes"
               and "@@" in n.get("Index Cond", "")]
    assert indexed, plans


def _matches(corpus, words: list[str]) -> dict:
    """Brute force over the namespace, as the owner, in Python: id -> query words it contains."""
    contents = corpus.execute(
        "SELECT id, content FROM memories WHERE namespace = %s", [NS]).fetchall()
    return {r[0]: sum(w in r[1].split() for w in words) for r in contents}


def test_the_lexical_leg_returns_what_its_rule_says(corpus, db_dsn):
    rows, need = _leg(db_dsn, "redis kafka canary")
    assert need == math.ceil(3 * LEXICAL_MIN_COVERAGE) == 2
    matched = _matches(corpus, ["redis", "kafka", "canary"])
    returned = [r["id"] for r in rows]
    assert len(returned) == 50
    assert all(matched[i] >= 2 for i in returned)          # the coverage floor
    assert [r["matched"] for r in rows] == [matched[i] for i in returned]  # counted right
    ranks = [r["rank"] for r in rows]
    assert ranks == sorted(ranks, reverse=True)             # best BM25 first
    # The words are equally common and each memory holds each word once, so BM25 orders by
    # how many words a memory holds: the 36 holding all three come first.
    full = {i for i, n in matched.items() if n == 3}
    assert set(returned[:36]) == full
    other = {r[0] for r in corpus.execute(
        "SELECT id FROM memories WHERE namespace = %s", [OTHER]).fetchall()}
    assert not other & set(returned)                         # never another tenant's row


@pytest.mark.parametrize("query", ["redis kafka canary", "redis kafka canary zebra"])
def test_common_words_are_read_strictest_coverage_first(corpus, db_dsn, query):
    """Each word is in 375 of the 3,000 memories, 36 hold all three ("zebra" is in none, so
    it is the rarest word and costs nothing). With room for only 30 candidates, fewer than even
    one common word's memories, the cut must not fall in index order among the 676 two-word
    matches: the common words are read as coverage levels, every word first. A rare word must
    not starve them either: the levels are read beside the rare words' memories."""
    matched = _matches(corpus, ["redis", "kafka", "canary"])
    full = {i for i, n in matched.items() if n == 3}
    assert len(full) > 30 and sum(n >= 2 for n in matched.values()) > 600
    for candidates, depth in ((30, 30), (30, 100)):
        rows, _ = _leg(db_dsn, query, candidates=candidates, depth=depth)
        assert len(rows) >= 30 and {r["id"] for r in rows[:30]} <= full, (candidates, depth)


def test_the_rare_branch_reads_only_memories_that_can_pass_the_floor(corpus, db_dsn):
    """Of "redis kafka canary", the rarest words whose memories add up to at most 1,000 are
    read whole (the rare branch: "canary" here). A memory must hold two of the three words, so
    the branch reads only the memories holding a rare word and another word (462 here), not
    every memory holding a rare word (992), which it would score and then drop the one-word
    ones on the floor. The answer is the rule's either way."""
    words = ["redis", "kafka", "canary"]
    plans: list[str] = []
    rows, need = _leg(db_dsn, " ".join(words), plans=plans, analyze=True)
    assert need == 2
    matched = _matches(corpus, words)
    held = {w: _matches(corpus, [w]) for w in words}
    rare = [words[i] for i in rarest([sum(held[w].values()) for w in words], LEXICAL_CANDIDATES)]
    holds_rare = {i for i in matched if any(held[w][i] for w in rare)}
    can_pass = sum(1 for i in holds_rare if matched[i] >= need)
    assert (rare, can_pass, len(holds_rare)) == (["canary"], 462, 992)
    bodies = [text.split("plan:", 1)[1].strip() for text in plans if "plan:" in text]
    branch = [n for body in bodies if body.startswith("{")
              for n in nodes(json.loads(body)["Plan"])
              if n.get("Node Type") == "Bitmap Heap Scan" and n.get("Relation Name") == "memories"
              and "search_tsv @@" in n.get("Filter", "")]
    assert [n["Actual Rows"] for n in branch] == [can_pass]
    full = {i for i, n in matched.items() if n == 3}
    assert len(rows) == 50 and {r["id"] for r in rows[:len(full)]} == full
    assert all(matched[r["id"]] >= 2 for r in rows)


def test_a_long_query_asks_for_at_most_two_of_its_words(corpus, db_dsn):
    words = ["ledger", "webhook", "redis", "kafka", "invoice", "tenant", "canary", "nightly",
             "budget", "quarterly", "forecast", "region"]
    rows, need = _leg(db_dsn, " ".join(words), depth=200, min_coverage=0.25)
    assert need == LEXICAL_MAX_NEED == 2
    matched = _matches(corpus, words)
    assert rows and all(matched[r["id"]] >= 2 for r in rows)
    assert all(matched[r["id"]] == 3 for r in rows[:100])   # the fullest first


def _remember(conn, ns: str, contents: list[str]) -> None:
    with conn.transaction():
        for i, content in enumerate(contents):
            conn.execute(
                "INSERT INTO memories (namespace, kind, title, content, tags, content_hash,"
                " author_client) VALUES (%s, 'FACT', NULL, %s, '{}', decode(md5(%s), 'hex'),"
                " 'test')", [ns, content, f"{ns}-{i}-{content}"])
        conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories m WHERE namespace = %s AND NOT EXISTS (SELECT 1 FROM"
            " memory_revisions r WHERE r.memory_id = m.id)", [ns])
    conn.execute("SELECT memhub_refresh_lexicon(%s)", [ns])


def _contents(rows, conn) -> list[str]:
    got = {r[0]: r[1] for r in conn.execute(
        "SELECT id, content FROM memories WHERE id = ANY(%s)", [[r["id"] for r in rows]])}
    return [got[r["id"]] for r in rows]


def test_a_rare_word_outranks_common_ones(db_conn, db_dsn):
    """"redis" is in one memory, "cache" and "policy" in forty: the memory holding the rare
    word (and one common one) must beat those holding both common words, though it is longer
    and older (the tie-breakers). Without IDF (every word weighted alike) they win."""
    rare = "redis cache settings for the session store of the checkout tier"
    filler = [f"cache policy note {i}" for i in range(40)]
    _remember(db_conn, NS, [rare, *filler])
    rows, _ = _leg(db_dsn, "redis cache policy")
    assert _contents(rows, db_conn)[0] == rare


def test_another_namespace_never_moves_this_ones_ranking(db_conn, db_dsn):
    """IDF comes from the namespace's own statistics: flooding another tenant with "redis"
    (making it common there) leaves this namespace's ranking exactly as it was."""
    filler = [f"cache policy note {i}" for i in range(40)]
    _remember(db_conn, NS, [*filler, "redis cache settings", "redis redis policy"])
    before = [(r["id"], r["rank"]) for r in _leg(db_dsn, "redis cache policy")[0]]
    _remember(db_conn, OTHER, [f"redis cache entry {i}" for i in range(500)])
    # Recounted as the owner, whom row-level security does not bind: the function's own
    # namespace filter is what is tested here.
    db_conn.execute("SELECT memhub_refresh_lexicon(%s)", [NS])
    after = [(r["id"], r["rank"]) for r in _leg(db_dsn, "redis cache policy")[0]]
    assert before == after
    state = db_conn.execute("SELECT namespace, docs FROM lexicon_state ORDER BY 1").fetchall()
    assert state == [(NS, 42), (OTHER, 500)]


def test_coverage_gates_match_exactly_the_rows_they_promise(db_conn):
    """at_least(terms, k), parsed and evaluated by PostgreSQL, against brute force: every
    subset of five words (some of them phrases, as identifiers are), every k."""
    words = ["alpha", "bravo", "charlie", "delta-echo", "foxtrot"]
    terms = [db_conn.execute("SELECT memhub_query_terms(%s)", [w]).fetchone()[0][0]
             for w in words]
    docs = [" ".join(w for j, w in enumerate(words) if mask >> j & 1) for mask in range(32)]
    for k in range(1, 6):
        got = db_conn.execute(
            """SELECT coalesce(array_agg(d ORDER BY d), '{}') FROM unnest(%s::text[]) AS d
                WHERE to_tsvector('english', d) || to_tsvector('simple', d) @@ %s::tsquery""",
            [docs, at_least(terms, k)]).fetchone()[0]
        want = sorted(d for d in docs if len(d.split()) >= k)
        assert got == want, k


def test_the_rare_gate_leaves_the_legs_answer_as_it_was(db_conn, db_dsn, monkeypatch):
    """The leg with rare_gate against the leg reading every memory of a rare word (the plain
    OR), on memories holding a phrase word whole, in part, or not at all: the same rows in the
    same order. "billing delta" holds "billing" and a part of "delta-echo", which `matched`
    counts, so it is an answer to "billing delta-echo kafka"."""
    _remember(db_conn, NS, ["billing delta", "billing delta-echo", "billing kafka", "billing",
                            "delta echo kafka", "kafka", "echo billing", "delta-echo kafka"])
    queries = ["billing delta-echo kafka", "billing kafka", "delta-echo billing", "billing"]
    new = [_leg(db_dsn, text)[0] for text in queries]
    monkeypatch.setattr("memhub.storage.postgres.retrieval.lexical_leg.rare_gate",
                        lambda indexed, loose, rare, need: any_of([indexed[i] for i in rare]))
    old = [_leg(db_dsn, text)[0] for text in queries]
    assert new == old
    assert "billing delta" in _contents(new[0], db_conn)


def test_the_rare_gate_matches_exactly_the_rows_that_can_pass_the_floor(db_conn):
    """rare_gate, evaluated by PostgreSQL, against brute force: documents made of subsets of
    six words ("delta" is a part of the phrase term "delta-echo"), every choice of rare terms,
    need 1 to 3. A document passes when it holds a rare term and at least need - 1 other terms
    as the leg's `matched` counts them: any lexeme of the term (so "delta" alone counts for
    "delta-echo" among the others, as it does in `matched`)."""
    words = ["alpha", "bravo", "charlie", "delta-echo", "foxtrot"]
    terms = [db_conn.execute("SELECT memhub_query_terms(%s)", [w]).fetchone()[0][0]
             for w in words]
    lexemes = [set(db_conn.execute("SELECT memhub_tsquery_lexemes(%s::tsquery)",
                                   [t]).fetchone()[0]) for t in terms]
    tokens = [*words, "delta"]
    docs = [" ".join(w for j, w in enumerate(tokens) if mask >> j & 1) for mask in range(64)]
    vectors = "to_tsvector('english', d) || to_tsvector('simple', d)"
    held = {d: (set(lx), exact) for d, lx, exact in db_conn.execute(
        f"""SELECT d, array(SELECT lexeme FROM unnest({vectors})),
                   array(SELECT t FROM unnest(%s::text[]) AS t WHERE {vectors} @@ t::tsquery)
              FROM unnest(%s::text[]) AS d""", [terms, docs]).fetchall()}
    loose = [any_lexeme(t, "") for t in terms]
    for rare in ([0], [3], [1, 4], [0, 2, 3]):
        for need in (1, 2, 3):
            got = db_conn.execute(
                f"""SELECT coalesce(array_agg(d ORDER BY d), '{{}}')
                      FROM unnest(%s::text[]) AS d WHERE {vectors} @@ %s::tsquery""",
                [docs, rare_gate(terms, loose, rare, need)]).fetchone()[0]
            want = sorted(
                d for d, (lx, exact) in held.items()
                if any(terms[i] in exact for i in rare)
                and sum(bool(lexemes[j] & lx) for j in range(len(terms))) >= need)
            assert got == want, (rare, need)
    # Past MAX_WORD_TESTS word tests a row, the gate is the plain OR of the rare terms.
    many = [f"( 'w{i}' )" for i in range(40)]
    assert rare_gate(many, many, list(range(10)), 2) == any_of(many[:10])


# Each word of a query is looked up by its English forms only (migration 0010): a memory
# holding a word as written must hold its English form too, in every part of the memory.
# Query word -> spellings a memory may hold it in.
FORMS = {
    "payments": ["payments", "Payment", "PAYMENTS", "payment's"],
    "tenants": ["tenants", "tenant", "per-tenant", "Tenants"],
    "zero-downtime": ["zero-downtime", "Zero-Downtime"],
    "PAYSTREAM_WEBHOOK_SECRET": ["PAYSTREAM_WEBHOOK_SECRET", "paystream_webhook_secret"],
    "JWTs": ["JWTs", "JWT", "jwt"],
    "SSO'd": ["SSO'd", "SSO", "SSOs"],
    "I'll": ["I'll", "I"],
    "retried": ["retried", "retries", "retry", "retrying"],
    "Kafka": ["Kafka", "kafka"],
}


def test_english_forms_find_exactly_what_both_spellings_found(db_conn):
    """Each spelling written once into one part of a memory (title, content or tags); then
    each word as a query, by the terms the leg uses, against the OR of both configurations'
    forms (the terms before 0010). Without the tags' English stems the memories tagged
    "payments" or "tenants" are missed."""
    rows = []
    for spellings in FORMS.values():
        for s in spellings:
            rows += [(f"{s} heading", "body text", []), ("heading", f"body {s} text", []),
                     ("heading", "body text", [s])]
    _insert_memories(db_conn, [(NS, *row) for row in rows])
    for w in FORMS:
        used, both = db_conn.execute(
            """SELECT (memhub_query_terms(%(w)s))[1],
                      (SELECT memhub_tsquery_or(phraseto_tsquery('english', v)
                                                || phraseto_tsquery('simple', v))
                         FROM unnest(memhub_word_variants(%(w)s)) AS v)""", {"w": w}).fetchone()
        found = [db_conn.execute(
            "SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM memories"
            " WHERE namespace = %s AND search_tsv @@ %s::tsquery", [NS, t]).fetchone()[0]
            for t in (used, both)]
        assert len(found[1]) >= 3, w                  # the word is there to be found
        assert found[0] == found[1], (w, used, both)


# The gates ask the namespaced-lexeme index (migration 0011) in index_form: lexemes prefixed by
# the namespace's key, phrases loosened to lexemes they cannot hold without. Query word ->
# texts of memories, some holding it, some holding its parts out of order.
INDEX_FORMS = {
    "write-ahead": ["the write-ahead log", "Write-Ahead logging", "ahead of the write"],
    "PAYSTREAM_WEBHOOK_SECRET": ["rotate PAYSTREAM_WEBHOOK_SECRET monthly",
                                 "the secret webhook of paystream"],
    "SSO'd": ["users are SSO'd", "SSO everywhere", "d SSO"],
    "JWTs": ["JWTs expire", "one JWT"],
    '"state of the art"': ["state of the art search", "the art of state"],
    "ledger": ["the ledger", "ledgers"],
}


def _insert_texts(db_conn, texts_by_ns: dict[str, list[str]]) -> None:
    _insert_memories(db_conn, [(ns, "heading", text, []) for ns, texts in texts_by_ns.items()
                               for text in texts])


def test_the_index_form_finds_what_the_words_find_in_their_namespace_only(db_conn):
    """For each word, by the terms the leg uses: the index form finds every memory of the
    namespace the exact term finds, and none of another namespace holding the same texts. The
    exact term still decides: a phrase's parts out of order are found by the index form and not
    by the term (the leg counts only the exact terms, `matched`)."""
    texts = [t for ts in INDEX_FORMS.values() for t in ts]
    _insert_texts(db_conn, {NS: texts, OTHER: texts})
    key, other_key = (db_conn.execute("SELECT memhub_ns_key(%s)", [ns]).fetchone()[0]
                      for ns in (NS, OTHER))
    assert key != other_key and key.endswith("/")
    loosened = 0
    for word in INDEX_FORMS:
        for term in db_conn.execute("SELECT memhub_query_terms(%s)", [word]).fetchone()[0]:
            exact = set(db_conn.execute(
                "SELECT coalesce(array_agg(id), '{}') FROM memories"
                " WHERE namespace = %s AND search_tsv @@ %s::tsquery", [NS, term]).fetchone()[0])
            indexed = db_conn.execute(
                "SELECT coalesce(array_agg(namespace), '{}'), coalesce(array_agg(id), '{}')"
                " FROM memories WHERE search_ns_tsv @@ %s::tsquery",
                [index_form(term, key)]).fetchone()
            assert exact, (word, term)                 # there is something to find
            assert set(indexed[0]) == {NS}, (word, term)
            assert exact <= set(indexed[1]), (word, term, index_form(term, key))
            loosened += len(set(indexed[1]) - exact)
    assert loosened  # some parts out of order were found by the index form alone


def test_a_search_for_a_phrase_word_returns_only_memories_holding_it(db_dsn, db_conn):
    """Through the leg: the index form finds "the secret webhook of paystream" too, and the
    exact words leave it out."""
    _insert_texts(db_conn, {NS: INDEX_FORMS["PAYSTREAM_WEBHOOK_SECRET"]})
    rows, _ = _leg(db_dsn, "PAYSTREAM_WEBHOOK_SECRET")
    contents = [db_conn.execute("SELECT content FROM memories WHERE id = %s",
                                [r["id"]]).fetchone()[0] for r in rows]
    assert contents == ["rotate PAYSTREAM_WEBHOOK_SECRET monthly"]


def test_the_index_never_refuses_a_write(db_conn):
    """A 2,040-byte word (the parser keeps words up to 2,047) is left out of the namespaced
    index rather than pushed over the lexeme limit by its prefix; the largest content
    (100,000 characters of distinct words) stays under tsvector's 1 MB with every prefix."""
    long_word = "q" * 2040
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [a + b + c for a in letters for b in letters for c in letters + "0123456789"]
    many = " ".join(words)[:100_000]
    _insert_texts(db_conn, {NS: [f"{long_word} tail", many]})
    sizes = db_conn.execute(
        "SELECT length(search_ns_tsv) FROM memories WHERE namespace = %s"
        " ORDER BY length(search_tsv)", [NS]).fetchall()
    assert sizes[0][0] >= 2 and sizes[1][0] >= 20_000, sizes


def test_the_namespaced_lexemes_are_search_tsv_s(db_conn):
    """search_ns_tsv repeats search_tsv's expression (a generated column cannot read another):
    over every part of a memory and every spelling of FORMS, it holds exactly search_tsv's
    lexemes, each prefixed by memhub_ns_key of the namespace."""
    rows = []
    for spellings in FORMS.values():
        for s in spellings:  # each spelling in one part of a memory
            rows += [(f"{s} heading", "body text", []), ("heading", f"body {s} text", []),
                     ("heading", "body text", [s])]
    _insert_memories(db_conn, [(NS, *row) for row in rows])
    mismatched = db_conn.execute(
        "SELECT title FROM memories WHERE tsvector_to_array(search_ns_tsv) IS DISTINCT FROM"
        " (SELECT array_agg(k || l ORDER BY k || l COLLATE \"C\")"
        "    FROM unnest(tsvector_to_array(search_tsv)) AS l,"
        "         (SELECT memhub_ns_key(namespace) AS k) AS key)").fetchall()
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone()[0] == len(rows)
    assert not mismatched


def test_memories_that_score_alike_come_newest_first(db_conn, db_dsn):
    """Twelve memories each hold "alpha", "omega" and one animal no other memory holds: their
    BM25 scores are equal (the same IDFs, frequencies and lengths), summed over different query
    words in whatever order each row's words come. The tie-breaker (newest first) must decide
    their order, not the last bit of a floating-point sum."""
    animals = ["kestrel", "marmot", "ocelot", "badger", "ferret", "jackal", "lemur", "bison",
               "puffin", "toucan", "condor", "falcon"]
    _remember(db_conn, NS, ["alpha note"] * 30 + ["omega note"] * 5)
    _remember(db_conn, NS, [f"alpha {animal} omega" for animal in animals])
    rows, _ = _leg(db_dsn, " ".join(["alpha", *animals, "omega"]))
    tied = [r for r in rows if r["matched"] == 3]
    assert len(tied) == 12
    assert max(r["rank"] for r in tied) - min(r["rank"] for r in tied) < 1e-9  # alike
    assert len({r["rank"] for r in tied}) == 1                                   # equal
    assert _contents(tied, db_conn) == [f"alpha {a} omega" for a in reversed(animals)]
