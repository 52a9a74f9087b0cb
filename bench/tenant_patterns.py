"""The patterns of bench/tenants.py (its docstring says what each measures)."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import statistics
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from bench import project_corpus, tenant_corpus, tenant_scale
from bench.common import local_memhub, mcp_client, percentile, summary_ms
from bench.tenant_probes import (
    Calls,
    Peak,
    cpu_seconds,
    flood,
    note,
    searchable_delays,
    searches,
    server_process,
    status_mib,
    wait_drained,
    write_notes,
)


def headline(name: str, result: dict) -> str:
    keys = ("peak", "searchable_after_ack_s", "b_search_ms", "ratio_p50", "small",
            "neighbour", "throughput", "errors", "problems")
    return "; ".join(f"{k}={result[k]}" for k in keys if k in result)


async def _wait_ready(base: str) -> float:
    started = time.monotonic()
    async with mcp_client(base) as client:
        while (await client.call_tool("stats", {})).structured_content[
                "embedding_model"]["state"] != "ready":
            await asyncio.sleep(0.1)
    return time.monotonic() - started


# --- memory ---------------------------------------------------------------------------------
async def _load(args, overrides: dict, *, cold: bool) -> dict:
    extra = {}
    if cold:
        extra["model_cache_dir"] = tempfile.mkdtemp(prefix="memhub-bench-cold-cache-")
    rng = random.Random(3)
    items = [note(i, rng) for i in range(args.load_writes)]
    with local_memhub(**overrides, **extra) as (base, _settings, _dsn):
        server = server_process()
        peak = Peak(server.pid)
        peak.start()
        calls = Calls()
        started = time.monotonic()
        ready = asyncio.ensure_future(_wait_ready(base))
        await write_notes(base, "load", items, clients=4, calls=calls)
        writes_s = time.monotonic() - started
        model_s = await ready
        drained = await wait_drained(base)
        peak.stop.set()
        return {"writes": len(items), "writes_s": round(writes_s, 1),
                "model_ready_after_s": round(model_s, 1),
                "drained_after_writes_s": round(drained, 1), "errors": dict(calls.errors),
                "peak": peak.report()}


async def load(args, overrides: dict) -> dict:
    return await _load(args, overrides, cold=False)


async def load_cold(args, overrides: dict) -> dict:
    return await _load(args, overrides, cold=True)


async def _pending(base: str, pending: dict, done) -> None:
    """Keep pending["n"] (the embedding queue's length, once a second) and pending["max"]
    current until the queue is empty in a reading begun after `done()`; pending["settled"]
    once a reading begun after `done()` is in (an import queues its jobs as it commits)."""
    async with mcp_client(base) as client:
        while True:
            finished = done()
            stats = (await client.call_tool("stats", {})).structured_content
            pending["n"] = stats["embedding_queue"]["pending"]
            pending["max"] = max(pending.get("max", 0), pending["n"])
            pending["settled"] = finished
            if finished and not pending["n"]:
                return
            await asyncio.sleep(1.0)


def _delays(delays: list[float]) -> dict:
    return {"probes": len(delays), "p50": round(statistics.median(delays), 3),
            "p95": round(percentile(delays, 95), 3), "max": round(max(delays), 3)}


async def backlog(args, overrides: dict) -> dict:
    """The backlog queued at once; while at least a fifth of it is left, a second namespace
    writes and searches by meaning (searchable_delays): the queue's fairness at its longest."""
    rng = random.Random(4)
    items = [note(i, rng, questions=False) for i in range(args.backlog)]
    with local_memhub(**overrides) as (base, settings, dsn):
        server = server_process()
        await _wait_ready(base)
        async with mcp_client(base) as client:  # the quiet namespace exists, embedded
            await client.call_tool("memory_remember", {"namespace": "quiet",
                                                       "content": "The quiet tenant's notes."})
        await wait_drained(base)
        idle = status_mib(server.pid, "VmRSS")
        peak = Peak(server.pid)
        peak.start()
        cpu = cpu_seconds(server)
        started = time.monotonic()
        tenant_corpus.bulk_load(dsn, "backlog", items, None, settings.embed_model)
        pending = {"n": len(items)}
        watcher = asyncio.ensure_future(_pending(base, pending, lambda: True))
        delays = await searchable_delays(base, "quiet",
                                         until=lambda: pending["n"] < len(items) // 5)
        await watcher
        drained = time.monotonic() - started
        peak.stop.set()
        return {"queued": len(items), "idle_rss_mib": idle,
                "drained_s": round(drained, 1),
                "embedded_per_s": round(len(items) / drained, 1),
                "server_cpu_ms_per_embedding": round(
                    (cpu_seconds(server) - cpu) * 1000 / len(items), 2),
                "searchable_after_ack_s": _delays(delays),
                "peak": peak.report()}


def _export_file(dsn: str, size: int, path: Path) -> None:
    """An export of `size` notes in namespace `import`, made in a scratch database of the same
    cluster, as another deployment's `memhub-admin export` would be."""
    from memhub.admin import export
    from memhub.storage.postgres.migrate import apply_migrations

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS import_source")
        conn.execute("CREATE DATABASE import_source")
    source = make_conninfo(dsn, dbname="import_source")
    apply_migrations(source)
    rng = random.Random(6)
    items = [note(i, rng, questions=False) for i in range(size)]
    tenant_corpus.bulk_load(source, "import", items, None, "none", analyze=False)
    asyncio.run(export.run(source, "import", str(path), force=True, progress=False))


async def import_(args, overrides: dict) -> dict:
    from memhub.admin import import_ as importer

    with local_memhub(**overrides) as (base, settings, dsn):
        server = server_process()
        await _wait_ready(base)
        path = Path(tempfile.mkdtemp(prefix="memhub-bench-import-")) / "import.jsonl"
        await asyncio.to_thread(_export_file, dsn, args.import_size, path)
        async with mcp_client(base) as client:  # the quiet namespace exists, embedded
            await client.call_tool("memory_remember", {"namespace": "quiet",
                                                       "content": "The quiet tenant's notes."})
        await wait_drained(base)
        peak = Peak(server.pid)
        peak.start()
        started = time.monotonic()
        # The import runs as the command would, on a loop of its own; the probes start with it.
        importing = asyncio.ensure_future(asyncio.to_thread(
            asyncio.run, importer.run(dsn, settings, str(path), namespace=None, progress=False)))
        pending = {"n": args.import_size}
        import_s = {"s": 0.0}
        importing.add_done_callback(
            lambda _: import_s.__setitem__("s", time.monotonic() - started))
        watcher = asyncio.ensure_future(_pending(base, pending, importing.done))
        # Probes while the import runs (one transaction: its jobs appear when it commits) and
        # then while at least a fifth of its embeddings is still queued.
        during: list[float] = []
        delays = await searchable_delays(
            base, "quiet", record=lambda d: during.append(d) if not importing.done() else None,
            until=lambda: pending.get("settled") and pending["n"] < args.import_size // 5)
        imported = await importing
        await watcher
        drained = time.monotonic() - started
        peak.stop.set()
        return {"imported": imported.get("embeddings_queued"),
                "import_s": round(import_s["s"], 1),
                "drained_s": round(drained, 1),
                "queue_max": pending.get("max", 0),
                "searchable_after_ack_s": _delays(delays),
                "while_importing_s": _delays(during) if during else None,
                "while_draining_s": _delays(delays[len(during):])
                if len(delays) > len(during) else None,
                "peak": peak.report()}


# --- fairness -------------------------------------------------------------------------------
async def noisy(args, overrides: dict) -> dict:
    rng = random.Random(7)
    with local_memhub(**overrides) as (base, settings, dsn):
        server = server_process()
        await _wait_ready(base)
        await write_notes(base, "tenant-b", [note(i, rng) for i in range(args.small)])
        tenant_corpus.bulk_load(dsn, "tenant-a",
                                [note(10**6 + i, rng, questions=False) for i in range(2000)],
                                None, settings.embed_model)
        await wait_drained(base, progress=True)
        texts = [t for _, t in project_corpus.queries(2 * args.quiet_searches, seed=21)]
        quiet_texts, flood_texts = texts[::2], texts[1::2]
        b_quiet = Calls()
        await searches(base, "tenant-b", quiet_texts[:20], calls=Calls())  # warm up
        await searches(base, "tenant-b", quiet_texts, calls=b_quiet)
        print(f"  B alone: {summary_ms(b_quiet.latency['hybrid'])}", flush=True)
        b_flood = Calls()
        peak = Peak(server.pid)
        peak.start()
        # The flood runs in a process of its own, so B's client shares no interpreter with
        # A's twelve: what B measures is the server. It starts first and outlasts B's searches.
        spawn = multiprocessing.get_context("spawn")
        stop, out = spawn.Event(), spawn.Queue()
        child = spawn.Process(target=_flood_process,
                              args=(base, "tenant-a", args.flooders, stop, out))
        child.start()
        await asyncio.sleep(5.0)
        await searches(base, "tenant-b", flood_texts, calls=b_flood)
        stop.set()
        a = await asyncio.to_thread(out.get, True, 300)
        child.join(60)
        peak.stop.set()
        quiet = summary_ms(b_quiet.latency["hybrid"])
        loud = summary_ms(b_flood.latency["hybrid"])
        return {"b_search_ms": {"quiet": quiet, "flood": loud},
                "ratio_p50": round(loud["p50"] / quiet["p50"], 2),
                "errors": {"b": dict(b_flood.errors), "a": a["errors"]},
                "a": a, "peak": peak.report()}


def _flood_process(base: str, namespace: str, clients: int, stop, out) -> None:
    """bench.tenant_probes.flood in a child process until `stop` is set; its summary to
    `out`."""
    calls = Calls()
    started = time.monotonic()
    asyncio.run(flood(base, namespace, clients, 3600, calls, stop=stop.is_set))
    out.put(calls.summary(time.monotonic() - started))


async def scale(args, overrides: dict) -> dict:
    return await tenant_scale.scale(args, overrides)


async def many(args, overrides: dict) -> dict:
    return await tenant_scale.many(args, overrides)


# --- concurrency ----------------------------------------------------------------------------
async def _mixed(base: str, namespaces: list[str], clients: int, seconds: float,
                 calls: Calls, ledger: dict, hot: dict[str, list[dict]], tag: str,
                 phase: int) -> float:
    """`clients` clients, client i in namespaces[i % len]: remember (keyed; a tenth re-sent
    with the same client_request_id) 30%, revise (of the namespace's shared memories) 20%,
    search 35%, context 15%. `phase` keeps each run's notes distinct from another's (an
    equal active content in a namespace is the same memory)."""
    qs = [t for _, t in project_corpus.queries(300, seed=31)]
    until = time.monotonic() + seconds

    async def loop(worker: int) -> None:
        ns = namespaces[worker % len(namespaces)]
        rng = random.Random(worker + 1000 * phase)
        n = 0
        async with mcp_client(base) as client:
            while time.monotonic() < until:
                n += 1
                pick = rng.random()
                if pick < 0.30:
                    key = f"{tag}-{worker}-{n}"
                    item = note(phase * 10**8 + worker * 10**5 + n, rng, long_every=0)
                    args = {"namespace": ns, **item, "key": key, "client_request_id": key}
                    answer = await calls.call(client, "remember", "memory_remember", args)
                    if answer and "memory" in answer:
                        ledger["keyed"][(ns, key)] = (answer["memory"]["id"], item["content"])
                        if rng.random() < 0.1:
                            again = await calls.call(client, "remember", "memory_remember",
                                                     args)
                            ledger["replays"].append((answer["memory"]["id"], again))
                elif pick < 0.50:
                    target = rng.choice(hot[ns])
                    content = f"Shared note revised by {tag} client {worker} at call {n}."
                    # Clients revise the same few memories: some lose the compare-and-set
                    # (CONFLICT, counted apart), by design.
                    answer = await calls.call(client, "revise", "memory_revise", {
                        "namespace": ns, "id": target["id"],
                        "expected_revision": target["revision"], "content": content},
                        expect=("CONFLICT",))
                    if answer and answer.get("outcome") == "revised":
                        target["revised"] += 1
                        target["revision"] = max(target["revision"],
                                                 answer["memory"]["revision"])
                    elif answer and answer.get("error") == "CONFLICT":
                        current = await client.call_tool("memory_get",
                                                         {"namespace": ns, "id": target["id"]})
                        target["revision"] = current.structured_content["memory"]["revision"]
                elif pick < 0.85:
                    await calls.call(client, "search", "memory_search",
                                     {"namespace": ns, "query": rng.choice(qs)})
                else:
                    await calls.call(client, "context", "memory_context",
                                     {"namespace": ns, "query": rng.choice(qs),
                                      "budget_tokens": 800})

    started = time.monotonic()
    await asyncio.gather(*(loop(w) for w in range(clients)))
    return time.monotonic() - started


async def _verify(base: str, ledger: dict, hot: dict[str, list[dict]]) -> list[str]:
    problems = []
    async with mcp_client(base) as client:
        for (ns, key), (memory_id, content) in ledger["keyed"].items():
            got = (await client.call_tool("memory_get", {"namespace": ns, "id": memory_id}
                                          )).structured_content["memory"]
            if got["status"] != "ACTIVE" or content not in got["content"] or got.get(
                    "key") not in (None, key):
                problems.append(f"{ns}/{key}: {got['status']}")
        for memory_id, again in ledger["replays"]:
            if not again or again.get("memory", {}).get("id") != memory_id:
                problems.append(f"replay of {memory_id} answered {str(again)[:120]}")
        for ns, targets in hot.items():
            for target in targets:
                got = (await client.call_tool("memory_get", {"namespace": ns,
                                                             "id": target["id"]}
                                              )).structured_content["memory"]
                if got["revision"] != 1 + target["revised"]:
                    problems.append(f"{ns}/{target['id']}: revision {got['revision']} after "
                                    f"{target['revised']} acknowledged revisions")
    return problems


async def _hot(base: str, namespaces: list[str], tag: str) -> dict[str, list[dict]]:
    hot: dict[str, list[dict]] = {}
    async with mcp_client(base) as client:
        for ns in namespaces:
            hot[ns] = []
            for i in range(4):
                answer = (await client.call_tool("memory_remember", {
                    "namespace": ns, "content": f"Shared note {i} of {ns} ({tag})."})
                ).structured_content
                hot[ns].append({"id": answer["memory"]["id"], "revision": 1, "revised": 0})
    return hot


async def _keyed_duplicates(dsn: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM (SELECT namespace, key FROM memories WHERE key IS NOT NULL"
            " AND status = 'ACTIVE' GROUP BY namespace, key HAVING count(*) > 1) d")
        return (await cur.fetchone())[0]


async def concurrency(args, overrides: dict) -> dict:
    namespaces = [f"team-{i:02d}" for i in range(args.namespaces)]
    rng = random.Random(8)
    with local_memhub(**overrides) as (base, settings, dsn):
        server = server_process()
        await _wait_ready(base)
        for ns in namespaces:
            tenant_corpus.bulk_load(dsn, ns, [note(i, rng, questions=False)
                                              for i in range(args.seed_memories)], None,
                                    settings.embed_model, analyze=False)
        await wait_drained(base, progress=True)
        out: dict = {}
        peak = Peak(server.pid)
        peak.start()
        for phase, (label, clients, spaces) in enumerate((
                ("1 client", 1, namespaces[:1]),
                (f"{args.clients} clients", args.clients, namespaces)), start=1):
            tag = label.split()[0]
            hot = await _hot(base, spaces, tag)
            calls, ledger = Calls(), {"keyed": {}, "replays": []}
            seconds = await _mixed(base, spaces, clients, args.seconds, calls, ledger, hot, tag,
                                   phase)
            problems = await _verify(base, ledger, hot)
            out[label] = {**calls.summary(seconds), "keyed_writes": len(ledger["keyed"]),
                          "replays": len(ledger["replays"]),
                          "revisions": sum(t["revised"] for ts in hot.values() for t in ts),
                          "pool_timeouts": sum(v for k, v in calls.errors.items()
                                               if k.endswith(":UNAVAILABLE")),
                          "problems": problems[:20], "problem_count": len(problems)}
        peak.stop.set()
        out["duplicated_keys"] = await _keyed_duplicates(dsn)
        out["throughput"] = {k: v["calls_per_s"] for k, v in out.items()
                             if isinstance(v, dict) and "calls_per_s" in v}
        out["errors"] = {k: v["errors"] for k, v in out.items()
                         if isinstance(v, dict) and "errors" in v}
        out["problems"] = sum(v["problem_count"] for v in out.values()
                              if isinstance(v, dict) and "problem_count" in v)
        out["peak"] = peak.report()
        return out
