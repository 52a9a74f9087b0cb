"""Memory as of a date (migration 0045, storage/as_of.py): a namespace is written, revised,
superseded, forgotten, expired and purged over time, then read as of every instant between
those events (each event's own instant, the microsecond before it and the middle of each
gap). Every read (list, search in each mode, context, get by id and by key) must answer
exactly what a model of the timeline says was current then, each memory at the revision it
had then; a purged memory never comes back.

Mutation checks (docs/retrieval.md, As of a date): make memhub_memories_at take each memory's
latest revision instead of the one current then, drop the status condition of
memhub_memories_as_of (stage 0 as of then) or the expiry from the status then, or change which
vector the semantic leg may compare, and these tests fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg
import pytest

from memhub.errors import Forbidden, InvalidInput, NotFound
from memhub.storage.admin import Actor
from memhub.storage.as_of import check_as_of
from memhub.storage.postgres.operator.purge import PostgresPurge
from memhub.storage.principal import Principal
from memhub.storage.purge import check_target
from memhub.storage.sanitize import unwrap_untrusted
from tests.conftest import make_settings
from tests.support.retrieval import WRITER, drain, embedder, open_backend
from tests.support.wait import until

__all__ = ["embedder"]

NS = "history"
WORD = "ledger"  # in every text: a lexical search for it finds every memory current then
TICK = timedelta(microseconds=1)


@dataclass
class Memory:
    """What the timeline says of one memory: born at revision 1, each revision's time and
    text, when it stopped being current (retired or expired) and with which status."""

    id: str
    key: str
    revisions: list[tuple[datetime, str]] = field(default_factory=list)
    ended: datetime | None = None
    end_status: str | None = None
    purged: bool = False

    @property
    def born(self) -> datetime:
        return self.revisions[0][0]

    def then(self, at: datetime) -> tuple[int, str, str] | None:
        """(revision, text, status) at `at`; None before its birth or once purged."""
        if self.purged or at < self.born:
            return None
        revision = max(i for i, (t, _) in enumerate(self.revisions, start=1) if t <= at)
        status = self.end_status if self.ended is not None and self.ended <= at else "ACTIVE"
        return revision, self.revisions[revision - 1][1], str(status)


def db_times(conn: psycopg.Connection, memory_id: str) -> tuple[list[datetime], datetime | None]:
    """(each revision's time, retired_at) as the database recorded them."""
    revs = [r[0] for r in conn.execute(
        "SELECT created_at FROM memory_revisions WHERE memory_id = %s ORDER BY revision",
        [memory_id])]
    retired = conn.execute("SELECT retired_at FROM memories WHERE id = %s",
                           [memory_id]).fetchone()
    return revs, retired[0] if retired else None


@pytest.fixture(scope="module")
async def timeline(module_dsn, embedder, tmp_path_factory):
    """Six memories over time; built once, only read by the tests."""
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("as-of"))
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        start = conn.execute("SELECT clock_timestamp()").fetchone()[0]
        async with open_backend(settings, embedder) as b:
            texts = {
                "steady": f"Deploys go out on Tuesdays ({WORD})",
                "queue1": f"The job queue runs on Redis ({WORD})",
                "queue2": f"The job queue runs on Redis 7 with AOF persistence ({WORD})",
                "queue3": f"The job queue runs on PostgreSQL with SKIP LOCKED ({WORD})",
                "freeze": f"Feature freeze holds until the release is cut ({WORD})",
                "secret": f"The staging password is hunter2 ({WORD})",
            }
            steady = (await b.remember(WRITER, NS, content=texts["steady"], key="deploys"))
            queue = (await b.remember(WRITER, NS, content=texts["queue1"], key="queue",
                                      kind="DECISION", tags=["infra"]))
            await drain(b, embedder)
            qid = queue["memory"]["id"]
            await b.revise(WRITER, NS, qid, 1, content=texts["queue2"])
            await drain(b, embedder)  # its vector is now of revision 2 only
            moved = await b.remember(WRITER, NS, content=texts["queue3"], key="queue",
                                     kind="DECISION", tags=["infra"], supersedes=[qid])
            await drain(b, embedder)
            await b.forget(WRITER, NS, moved["memory"]["id"], "the queue decision is reopened")
            secret = await b.remember(WRITER, NS, content=texts["secret"])
            expires = conn.execute("SELECT now() + interval '1.5 seconds'").fetchone()[0]
            freeze = await b.remember(WRITER, NS, content=texts["freeze"],
                                      expires_at=expires.isoformat())
            await drain(b, embedder)
            await PostgresPurge(module_dsn).purge(
                check_target("memory", secret["memory"]["id"]), reason="a leaked password",
                actor=Actor("cli:test", "local"))

            async def expired() -> bool:
                return conn.execute("SELECT now() > %s", [expires]).fetchone()[0]

            await until(expired, timeout=10, what="the freeze's expiry")

            model: dict[str, Memory] = {}
            for name, made, revs in (("steady", steady, ["steady"]),
                                     ("queue", queue, ["queue1", "queue2"]),
                                     ("moved", moved, ["queue3"]),
                                     ("freeze", freeze, ["freeze"])):
                mid = made["memory"]["id"]
                times, retired = db_times(conn, mid)
                model[name] = Memory(mid, made["memory"]["key"] or "",
                                     list(zip(times, [texts[r] for r in revs], strict=True)))
                model[name].ended = retired
            model["queue"].end_status = "SUPERSEDED"
            model["moved"].end_status = "DELETED"
            model["freeze"].ended, model["freeze"].end_status = expires, "EXPIRED"
            secret_born = secret["memory"]["created_at"]
            model["secret"] = Memory(secret["memory"]["id"], "", [
                (datetime.fromisoformat(secret_born), texts["secret"])], purged=True)
            now = conn.execute("SELECT now()").fetchone()[0]
            events = sorted({t for m in model.values() for t, _ in m.revisions}
                            | {m.ended for m in model.values() if m.ended})
            gaps = zip(events, events[1:], strict=False)
            instants = sorted({start, now, *events, *(t - TICK for t in events),
                               *(a + (z - a) / 2 for a, z in gaps)})
            yield b, model, instants


def expected(model: dict[str, Memory], at: datetime) -> dict[str, tuple[int, str]]:
    """{id: (revision, text)} of the memories current at `at`."""
    out = {}
    for m in model.values():
        then = m.then(at)
        if then is not None and then[2] == "ACTIVE":
            out[m.id] = then[:2]
    return out


def seen(memories: list[dict]) -> dict[str, tuple[int, str]]:
    return {m["id"]: (m["revision"], unwrap_untrusted(m["content"])) for m in memories}


async def test_the_timeline_covers_every_kind_of_event(timeline):
    _, model, instants = timeline
    assert model["queue"].ended == model["moved"].born  # superseded in its successor's instant
    assert all(m.ended for m in model.values() if not m.purged and m.id != model["steady"].id)
    assert len(instants) >= 20


async def test_memory_list_as_of_every_instant_is_what_was_current_then(timeline):
    b, model, instants = timeline
    for at in instants:
        got = await b.list_as_of(WRITER, NS, at, limit=200)
        assert seen(got["memories"]) == expected(model, at), at
        assert all(m["status"] == "ACTIVE" for m in got["memories"])


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "semantic"])
async def test_memory_search_as_of_every_instant_ranks_only_what_was_current_then(
        timeline, mode):
    b, model, instants = timeline
    for at in instants:
        got = await b.search_as_of(WRITER, NS, WORD, at, limit=100, mode=mode)
        found = seen([r["memory"] for r in got["results"]])
        want = expected(model, at)
        assert set(found) <= set(want), at  # nothing that was not current then
        assert all(found[i] == want[i] for i in found), at  # each at its revision then
        if mode != "semantic":
            assert found == want, at
        assert got["as_of"] == at.isoformat()


async def test_a_vector_of_another_revision_never_ranks_a_memory_as_of_then(timeline):
    """Between the queue's first revision and its second it is current at revision 1, but its
    stored vector is of revision 2: the semantic leg leaves it out; its words still find it."""
    b, model, _ = timeline
    queue = model["queue"]
    at = queue.revisions[0][0] + (queue.revisions[1][0] - queue.revisions[0][0]) / 2
    semantic = await b.search_as_of(WRITER, NS, "job queue Redis", at, mode="semantic")
    assert queue.id not in [r["memory"]["id"] for r in semantic["results"]]
    hybrid = await b.search_as_of(WRITER, NS, "job queue Redis", at, mode="hybrid")
    hit = next(r for r in hybrid["results"] if r["memory"]["id"] == queue.id)
    assert hit["why"]["semantic_rank"] is None and hit["why"]["lexical_rank"] == 1
    assert hit["memory"]["revision"] == 1 and hit["memory"]["current_now"] is False
    later = queue.revisions[1][0] + (queue.ended - queue.revisions[1][0]) / 2
    again = await b.search_as_of(WRITER, NS, "job queue Redis", later, mode="semantic")
    assert again["results"][0]["memory"]["id"] == queue.id  # now the vector is of its text


async def test_memory_context_as_of_every_instant_packs_only_what_was_current_then(timeline):
    b, model, instants = timeline
    for at in instants:
        packed = await b.context_as_of(WRITER, NS, None, at, budget_tokens=8000)
        got = {m["id"]: (m["revision"], unwrap_untrusted(m["text"]))
               for m in packed["memories"]}
        assert got == expected(model, at), at
        asked = await b.context_as_of(WRITER, NS, "job queue", at, budget_tokens=8000)
        want = expected(model, at)
        assert all(m["id"] in want and m["revision"] == want[m["id"]][0]
                   for m in asked["memories"]), at


async def test_memory_get_as_of_every_instant_is_the_memory_as_it_was_then(timeline):
    b, model, instants = timeline
    for at in instants:
        for m in model.values():
            then = m.then(at)
            if then is None:
                with pytest.raises(NotFound) as err:
                    await b.get_as_of(WRITER, NS, at, memory_id=m.id)
                assert ("purged_at" if m.purged else "created_at") in err.value.details
                continue
            got = (await b.get_as_of(WRITER, NS, at, memory_id=m.id))["memory"]
            assert (got["revision"], unwrap_untrusted(got["content"]), got["status"]) == then
            if then[2] == "SUPERSEDED":
                assert got["superseded_by"] == model["moved"].id


async def test_memory_get_by_key_as_of_is_the_holder_then(timeline):
    b, model, _ = timeline
    queue, moved = model["queue"], model["moved"]
    before = await b.get_as_of(WRITER, NS, queue.ended - TICK, key="queue")
    assert before["memory"]["id"] == queue.id and before["memory"]["status"] == "ACTIVE"
    after = await b.get_as_of(WRITER, NS, queue.ended, key="queue")
    assert after["memory"]["id"] == moved.id
    with pytest.raises(NotFound) as err:
        await b.get_as_of(WRITER, NS, queue.born - TICK, key="queue")
    assert err.value.details["created_at"] == queue.born.isoformat()


async def test_current_now_says_whether_the_memory_is_still_so(timeline):
    b, model, _ = timeline
    at = model["freeze"].born
    got = {m["id"]: m["current_now"]
           for m in (await b.list_as_of(WRITER, NS, at, limit=200))["memories"]}
    assert got == {model["steady"].id: True, model["freeze"].id: False}
    queue = model["queue"]
    first = await b.get_as_of(WRITER, NS, queue.born, memory_id=queue.id)
    assert first["memory"]["current_now"] is False


async def test_as_of_later_than_now_is_refused_and_before_the_namespace_is_empty(timeline):
    b, model, instants = timeline
    later = datetime.now(instants[0].tzinfo) + timedelta(hours=1)
    for read in (b.list_as_of(WRITER, NS, later),
                 b.search_as_of(WRITER, NS, WORD, later),
                 b.context_as_of(WRITER, NS, None, later),
                 b.get_as_of(WRITER, NS, later, memory_id=model["steady"].id)):
        with pytest.raises(InvalidInput) as err:
            await read
        assert err.value.details["field"] == "as_of"
    first = min(m.born for m in model.values())
    assert (await b.list_as_of(WRITER, NS, first - TICK))["memories"] == []
    assert (await b.search_as_of(WRITER, NS, WORD, first - TICK))["results"] == []
    assert (await b.context_as_of(WRITER, NS, None, first - TICK))["memories"] == []


def test_as_of_needs_an_iso_8601_time_with_its_zone():
    assert check_as_of("2026-01-31T12:00:00Z").utcoffset() == timedelta(0)
    assert check_as_of("2026-01-31T13:00:00+01:00").utcoffset() == timedelta(hours=1)
    for bad in ("2026-01-31T12:00:00", "yesterday", "", "2026-01-31T12:00:00Z" + " " * 60, 7,
                None):
        with pytest.raises(InvalidInput):
            check_as_of(bad)


async def test_as_of_reads_are_scoped_to_the_callers_namespaces(timeline):
    b, model, instants = timeline
    other = Principal(token_id=9, surface="cursor", namespaces=("elsewhere",))
    for read in (b.list_as_of(other, NS, instants[-1]),
                 b.search_as_of(other, NS, WORD, instants[-1]),
                 b.get_as_of(other, NS, instants[-1], memory_id=model["steady"].id)):
        with pytest.raises(Forbidden):
            await read


async def test_row_level_security_binds_the_as_of_functions(module_dsn, timeline):
    """As memhub_app with another namespace in scope, the functions see nothing of this one
    (they are security invoker: the policies of memories and memory_revisions apply)."""
    with psycopg.connect(module_dsn) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute("SELECT set_config('memhub.namespaces', 'elsewhere', true)")
        for fn in ("memhub_memories_as_of", "memhub_memories_at"):
            rows = conn.execute(f"SELECT count(*) FROM {fn}(%s, now())", [NS]).fetchone()[0]
            assert rows == 0
        conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [NS])
        assert conn.execute("SELECT count(*) FROM memhub_memories_as_of(%s, now())",
                            [NS]).fetchone()[0] == 1


async def test_a_vector_of_the_same_text_ranks_the_memory_at_its_older_revision(
        db_dsn, tmp_path, embedder):
    """A revision that changed only the tags keeps the text, so the vector of the newer
    revision is the vector of the older one's text: the semantic leg may compare it."""
    async with open_backend(make_settings(db_dsn, tmp_path), embedder) as b:
        made = (await b.remember(WRITER, NS, content="Invoices are archived for ten years",
                                 tags=["billing"]))["memory"]
        await b.revise(WRITER, NS, made["id"], 1, tags=["billing", "retention"])
        await drain(b, embedder)
        history = await b.memory_history(WRITER, NS, made["id"])
        first, second = (datetime.fromisoformat(r["created_at"])
                         for r in history["revisions"])
        found = await b.search_as_of(WRITER, NS, "how long do we keep invoices",
                                     first + (second - first) / 2, mode="semantic")
    hit = found["results"][0]
    assert (hit["memory"]["id"], hit["memory"]["revision"]) == (made["id"], 1)
    assert hit["memory"]["tags"] == ["billing"] and hit["why"]["semantic_rank"] == 1
