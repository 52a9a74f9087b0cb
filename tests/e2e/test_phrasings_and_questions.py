"""What the calling model adds, through a real server and a real MCP client: `questions` on
memory_remember and memory_revise, `also` on memory_search and recall; and what a hit costs
the model that reads it (tools/hits.py, docs/retrieval.md)."""

from __future__ import annotations

import json

from tests.conftest import WEB_TOKEN
from tests.support.wait import until

NS = "asked"
SHORT = [("Job queue", "Background jobs run on PostgreSQL with FOR UPDATE SKIP LOCKED."),
         ("Money type", "Amounts are integer minor units; never floats."),
         ("Deploys", "Production deploys go out Tuesdays and Thursdays after 10:00 UTC."),
         ("Auth", "Internal services authenticate with short-lived JWTs from authd."),
         ("Webhooks", "Outbound webhooks are signed with HMAC-SHA256 of the raw body."),
         ("Secrets", "Secrets live in AWS Secrets Manager, read at start-up."),
         ("Retries", "Failed jobs retry five times with exponential backoff."),
         ("Logging", "Logs are JSON lines with a request id on every line."),
         ("Migrations", "Schema migrations run with a five second lock timeout."),
         ("Feature flags", "Feature flags are read from the flags table, cached 30 s.")]


async def call(client, tool, ns=NS, **args):
    return await client.call_tool(tool, {"namespace": ns, **args})


async def embedded(client) -> bool:
    stats = (await client.call_tool("stats", {})).structured_content
    return (stats["embedding_model"]["state"] == "ready"
            and stats["embedding_queue"]["pending"] == 0)


async def test_questions_are_kept_and_find_their_memory_by_meaning(server):
    async with server.client(WEB_TOKEN) as c:
        made = (await call(c, "memory_remember", content=SHORT[4][1], title=SHORT[4][0],
                           questions=["how can a merchant verify a callback came from us?"])
                ).structured_content
        mid = made["memory"]["id"]
        assert len(made["memory"]["questions"]) == 1
        for title, content in SHORT[:4]:
            await call(c, "memory_remember", content=content, title=title)
        await until(lambda: embedded(c), timeout=60, what="the memories embedded")
        found = (await call(c, "memory_search", mode="semantic",
                            query="how does a merchant confirm a callback is really ours")
                 ).structured_content
        assert found["results"][0]["id"] == mid, json.dumps(found, indent=1)[:3000]
        revised = (await call(c, "memory_revise", id=mid, expected_revision=1,
                              title="Webhook signing")).structured_content
        assert revised["memory"]["questions"] == made["memory"]["questions"]


async def test_phrasings_lift_the_memory_the_words_of_the_question_miss(server):
    async with server.client(WEB_TOKEN) as c:
        ids = {}
        for title, content in SHORT:
            ids[title] = (await call(c, "memory_remember", ns="widened", content=content,
                                     title=title)).structured_content["memory"]["id"]
        await until(lambda: embedded(c), timeout=60, what="the memories embedded")
        query = "how do we keep work from running twice when several workers poll"
        widened = (await call(c, "recall", ns="widened", query=query,
                              also=["job queue row locking", "SKIP LOCKED worker queue"])
                   ).structured_content
        assert widened["results"][0]["id"] == ids["Job queue"]
        assert widened["results"][0]["match"] in ("strong", "weak")


async def test_a_search_hit_of_a_short_memory_costs_at_most_450_bytes(server):
    """The same information as the memory, nothing inferable (docs/retrieval.md, What a hit
    costs): measured as the model reads it, the tool result's text."""
    async with server.client(WEB_TOKEN) as c:
        for title, content in SHORT:
            await call(c, "memory_remember", ns="hit-cost", content=content, title=title,
                       tags=["ops"])
        await until(lambda: embedded(c), timeout=60, what="the memories embedded")
        result = await call(c, "memory_search", ns="hit-cost",
                            query="how do we run things in production", limit=10)
        hits = result.structured_content["results"]
        assert len(hits) == len(SHORT)
        text = result.content[0].text
        assert len(text.encode()) / len(hits) <= 450, len(text.encode()) / len(hits)
        hit = json.loads(text)["results"][0]
        assert hit["text"].startswith("<<<UNTRUSTED_DATA>>>") and hit["text"].count(
            "<<<UNTRUSTED_DATA>>>") == 1
        assert None not in hit.values() and "namespace" not in hit and "status" not in hit
