"""coord_drift_scan through the real /mcp endpoint: near-duplicates, stale claims and possible
contradictions are reported and nothing is written; a scoped token scans only its own
namespaces."""

from __future__ import annotations

import psycopg

from tests.conftest import WEB_TOKEN
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.wait import until

NS = "acme"


async def wait_embedded(client, timeout: float = 60.0) -> None:
    async def drained() -> bool:
        stats = await call(client, "stats", {})
        model = stats.get("embedding_model", {}).get("state")
        return model == "ready" and stats["embedding_queue"]["pending"] == 0

    await until(drained, timeout=timeout, what="the embedding queue drained")


def count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


async def test_the_scan_reports_each_kind_of_drift_and_writes_nothing(server, db_dsn):
    async with server.client(WEB_TOKEN) as web:
        older = await call(web, "memory_remember", {
            "namespace": NS, "kind": "FACT", "title": "Job queue",
            "content": "The background job queue runs on Redis."})
        twin = await call(web, "memory_remember", {
            "namespace": NS, "kind": "FACT", "title": "Job queue backend",
            "content": "The background job queue is running on Redis."})
        convention = await call(web, "memory_remember", {
            "namespace": NS, "kind": "CONVENTION", "tags": ["logging"],
            "content": "Log lines are plain text, one per event."})
        decision = await call(web, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "tags": ["logging"],
            "content": "We log structured JSON from now on."})
        claimed = await call(web, "memory_remember", {
            "namespace": NS, "content": "PR 5 merged", "claim": {"repo": "acme/api", "pr": 5}})
        with psycopg.connect(db_dsn) as conn:  # as a reconcile that found it unmerged would
            conn.execute("INSERT INTO claim_verdicts (namespace, memory_id, verdict, evidence,"
                         " source) VALUES (%s, %s, 'stale', '{}', 'reconcile')",
                         (NS, claimed["memory"]["id"]))
        await wait_embedded(web)
        before = [count(db_dsn, t) for t in ("memories", "claim_verdicts", "change_feed")]
        found = await call(web, "coord_drift_scan", {"namespace": NS})
        after = [count(db_dsn, t) for t in ("memories", "claim_verdicts", "change_feed")]
    assert before == after
    assert found["near_duplicates_by"] == "meaning"
    assert [(p["older_id"], p["newer_id"]) for p in found["near_duplicates"]] == [
        (older["memory"]["id"], twin["memory"]["id"])]
    assert [s["id"] for s in found["stale_claims"]] == [claimed["memory"]["id"]]
    assert [(c["older_id"], c["decision_id"], c["shared_tags"])
            for c in found["contradictions"]] == [
        (convention["memory"]["id"], decision["memory"]["id"], ["logging"])]


async def test_a_scoped_token_scans_its_namespace_and_never_all(server, db_dsn):
    scoped = insert_token(db_dsn, "cursor", namespaces=[NS])
    async with server.client(WEB_TOKEN) as web, server.client(scoped) as mine:
        for ns in (NS, "beta"):
            for tag_kind in ("CONVENTION", "DECISION"):
                await call(web, "memory_remember", {
                    "namespace": ns, "kind": tag_kind, "tags": ["ci"],
                    "content": f"{tag_kind} about CI in {ns}."})
        everywhere = await call(web, "coord_drift_scan", {"namespace": NS,
                                                          "all_namespaces": True})
        own = await call(mine, "coord_drift_scan", {"namespace": NS})
        refused = await error_of(mine, "coord_drift_scan", {"namespace": NS,
                                                            "all_namespaces": True})
    assert {c["namespace"] for c in everywhere["contradictions"]} == {NS, "beta"}
    assert {c["namespace"] for c in own["contradictions"]} == {NS}
    assert refused["code"] == "FORBIDDEN"
