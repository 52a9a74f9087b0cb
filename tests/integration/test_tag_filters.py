"""Tag filters (memory_list(tag=...), memory_search(tags=[...])): exactly the memories of the
namespace that carry every tag asked for, whatever characters a tag holds, read through the
namespaced tags' index (migration 0016) rather than by walking the namespace.

Mutation checks (docs/failure-modes.md): the filters written as `tags @> ...` again (the
lexical leg's levels included, 0019) make the plan tests fail (every memory of the namespace
read for a rare tag); a gate that does not quote its lexemes fails the exactness test (tsquery
syntax in a tag)."""

from __future__ import annotations

import json
import random

import pytest

from memhub.storage.postgres.queries import q
from memhub.storage.postgres.retrieval.lexical_leg import index_form
from memhub.storage.postgres.retrieval.search import search_gucs
from tests.conftest import make_settings
from tests.support.plans import explain_as_app, rows_read
from tests.support.retrieval import (
    WRITER,
    bulk_insert_memories,
    drain,
    embedder,
    open_backend,
)

__all__ = ["embedder"]

NS, OTHER = "tags", "tags-other"
# Tags that tsquery syntax, case folding, parsing or prefix matching would get wrong.
TAGS = ["kafka", "Kafka", "kafka-streams", "o'neil", "back\\slash", "a:b", "x & y", "!not",
        "c++", "日本語", "two words", "'quoted'", "*", "a|b", "(x)", "<->", "k:*"]
ONLY_ELSEWHERE = "elsewhere-only"
COUNT = 60


def _tagging(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(TAGS, rng.randint(0, 3)) for _ in range(COUNT)]


@pytest.fixture(scope="module")
async def world(module_dsn, embedder, tmp_path_factory):
    """COUNT memories in NS with 0-3 of TAGS each, and as many in OTHER tagged differently
    (plus a tag NS never uses): {tag: ids in NS carrying it}. Built once; the tests read."""
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("tags"))
    async with open_backend(settings, embedder) as backend:
        carrying: dict[str, set[str]] = {t: set() for t in [*TAGS, ONLY_ELSEWHERE]}
        for ns, tagging in ((NS, _tagging(1)), (OTHER, _tagging(2))):
            for i, tags in enumerate(tagging):
                if ns == OTHER and i % 10 == 0:
                    tags = [*tags, ONLY_ELSEWHERE]
                written = await backend.remember(
                    WRITER, ns, kind="FACT", tags=tags,
                    content=f"Ledger entry {i} of {ns}: the ledger keeps its entries in order.")
                if ns == NS:
                    for tag in tags:
                        carrying[tag].add(written["memory"]["id"])
        await drain(backend, embedder)
        yield backend, carrying


@pytest.mark.parametrize("tag", [*TAGS, ONLY_ELSEWHERE])
async def test_a_listing_by_tag_returns_exactly_the_namespaces_memories_carrying_it(world, tag):
    backend, carrying = world
    listed = await backend.list_memories(WRITER, NS, tag=tag, limit=100)
    assert {m["id"] for m in listed["memories"]} == carrying[tag]
    for status in ("ALL", "SUPERSEDED"):   # the audit listing filters the same way
        audit = await backend.list_memories(WRITER, NS, tag=tag, status=status, limit=100)
        assert {m["id"] for m in audit["memories"]} == (carrying[tag] if status == "ALL"
                                                         else set())


@pytest.mark.parametrize("tags", [["kafka"], ["Kafka"], ["kafka", "o'neil"], ["x & y"],
                                  ["k:*"], ["a:b", "c++"], ["two words", "日本語"],
                                  [ONLY_ELSEWHERE]])
@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
async def test_a_search_by_tags_returns_only_memories_carrying_all_of_them(world, tags, mode):
    backend, carrying = world
    wanted = set.intersection(*(carrying[t] for t in tags))
    found = await backend.search(WRITER, NS, "ledger entry", limit=100, tags=tags, mode=mode)
    ids = {r["memory"]["id"] for r in found["results"]}
    assert ids <= wanted
    for r in found["results"]:
        assert set(tags) <= set(r["memory"]["tags"])
    if mode == "lexical":   # every memory holds both words: the tag filter alone decides
        assert ids == wanted


RARE_SIZE = 3000


def _rare_and_common(i: int) -> list[str]:
    return ["rare"] if i % 1000 == 0 else ["common", f"t{i % 7}"]


@pytest.mark.parametrize(("statement", "extra"), [
    ("memories.list_live", {}),
    ("memories.list_by_status", {"status": None}),            # ALL
])
def test_a_listing_by_a_rare_tag_reads_only_the_memories_carrying_it(db_conn, db_dsn,
                                                                     statement, extra):
    bulk_insert_memories(db_conn, NS, RARE_SIZE, tags=_rare_and_common)
    db_conn.execute("ANALYZE memories")
    params = {"namespace": NS, "kind": None, "tag": "rare", "include_quarantined": False,
              "after_seq": None, "limit": 20, "key_prefix": None, **extra}
    plan = explain_as_app(db_dsn, NS, q(statement), params)
    assert plan["Actual Rows"] == RARE_SIZE // 1000
    assert rows_read(plan) <= 10, json.dumps(plan, indent=1)


def test_the_semantic_leg_under_a_rare_tag_reads_only_the_memories_carrying_it(db_conn, db_dsn):
    bulk_insert_memories(db_conn, NS, RARE_SIZE, tags=_rare_and_common)
    with db_conn.transaction():
        db_conn.execute("SELECT set_config('memhub.namespaces', '*', true)")
        db_conn.execute(
            "INSERT INTO memory_embeddings (memory_id, namespace, revision, model, embedding)"
            " SELECT id, namespace, 1, 'test-model',"
            "        ARRAY(SELECT random() - 0.5 + 0 * seq FROM generate_series(1, 384))::vector"
            "   FROM memories WHERE namespace = %s", [NS])
    db_conn.execute("ANALYZE memories")
    db_conn.execute("ANALYZE memory_embeddings")
    params = {"namespace": NS, "kinds": None, "tags": ["rare"], "depth": 100,
              "embedding": "[" + ",".join(["0.05"] * 384) + "]", "model": "test-model",
              "question_penalty": 0.1}
    sql = q("search.semantic").replace("%(embedding)s", "%(embedding)s::vector")
    plan = explain_as_app(db_dsn, NS, sql, params, gucs=search_gucs(100))
    assert plan["Actual Rows"] == RARE_SIZE // 1000
    assert rows_read(plan) <= 10, json.dumps(plan, indent=1)


def test_a_lexical_level_under_a_rare_tag_reads_only_the_memories_carrying_it(db_conn, db_dsn):
    """A coverage level of the lexical leg (memhub_lexical_gate, 0019): every memory holds the
    level's word ("ledger"); the tag's index, ANDed with the words', leaves only the three
    tagged ones to read."""
    bulk_insert_memories(db_conn, NS, RARE_SIZE, tags=_rare_and_common)
    db_conn.execute("ANALYZE memories")
    key = db_conn.execute("SELECT memhub_ns_key(%s)", [NS]).fetchone()[0]
    params = {"namespace": NS, "term": "'ledger'", "gate": index_form("'ledger'", key),
              "tags": ["rare"]}
    plan = explain_as_app(db_dsn, NS, (
        "SELECT * FROM memhub_lexical_gate(%(namespace)s, ARRAY[%(term)s::tsquery],"
        " %(gate)s::tsquery, 1, '{}', 100, NULL, %(tags)s::text[])"), params,
        gucs=search_gucs(100))
    assert plan["Actual Rows"] == RARE_SIZE // 1000
    assert 0 < rows_read(plan) <= 10, json.dumps(plan, indent=1)


def test_the_tags_column_is_keyed_as_the_words_are(db_conn):
    """The column and the gate write the namespace's key out (0016); it must be
    memhub_ns_key's, or a filter would find nothing."""
    bulk_insert_memories(db_conn, NS, 3, tags=lambda i: [f"t{i}", "o'neil"])
    rows = db_conn.execute(
        "SELECT tsvector_to_array(tag_ns_tsv) AS lexemes, tags, memhub_ns_key(namespace) AS key,"
        "       tag_ns_tsv @@ memhub_tag_gate(namespace, tags) AS gated"
        "  FROM memories WHERE namespace = %s", [NS]).fetchall()
    assert len(rows) == 3
    for lexemes, tags, key, gated in rows:
        assert sorted(lexemes) == sorted(key + t for t in tags)
        assert gated


async def test_a_revision_that_changes_the_tags_moves_the_memory_between_filters(settings):
    async with open_backend(settings, None) as backend:
        written = await backend.remember(WRITER, NS, kind="FACT", tags=["before", "kept"],
                                         content="The ledger rounds half to even.")
        memory_id = written["memory"]["id"]
        await backend.revise(WRITER, NS, memory_id, 1, tags=["after", "kept"])
        for tag, expected in (("before", set()), ("after", {memory_id}), ("kept", {memory_id})):
            listed = await backend.list_memories(WRITER, NS, tag=tag)
            assert {m["id"] for m in listed["memories"]} == expected
            found = await backend.search(WRITER, NS, "ledger", tags=[tag], mode="lexical")
            assert {r["memory"]["id"] for r in found["results"]} == expected
