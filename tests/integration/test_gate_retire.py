"""The intent gate enforced by the storage write itself (storage/postgres/memories/retire_gate.py,
migration 0037): whoever calls `remember` with supersedes or `forget`, a namespace with the
gate on retires nothing without the confirmation of a preview, and a confirmation is spent
with its write."""

from __future__ import annotations

import pytest

from memhub.errors import ConfirmationRequired, Conflict, MemhubError
from memhub.storage import gate_confirm
from tests.support.memories import DESKTOP, NS, open_backend

GATE_ON = {"intent_gate": "on"}


async def statuses(backend) -> dict[str, str]:
    listed = await backend.list_memories(DESKTOP, NS, status="ALL", limit=100)
    return {m["id"]: m["status"] for m in listed["memories"]}


async def test_a_direct_supersede_or_forget_in_a_gated_namespace_retires_nothing(
        db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as backend:
        old = (await backend.remember(DESKTOP, NS, content="Deploys go out on Tuesdays"))[
            "memory"]
        await backend.namespace_init(DESKTOP, NS, GATE_ON)
        before = await statuses(backend)

        with pytest.raises(ConfirmationRequired) as superseding:
            await backend.remember(DESKTOP, NS, content="Deploys go out on Thursdays",
                                   supersedes=[old["id"]], client_request_id="direct-1")
        with pytest.raises(ConfirmationRequired) as forgetting:
            await backend.forget(DESKTOP, NS, old["id"], "not true any more")

        assert superseding.value.code == forgetting.value.code == "CONFIRMATION_REQUIRED"
        assert await statuses(backend) == before == {old["id"]: "ACTIVE"}
        # The refused write's request id was not spent either: a confirmed write may use it.
        preview = await backend.gate_preview(DESKTOP, NS, "memory_forget",
                                             gate_confirm.forget_arguments(old["id"], "gone"),
                                             targets=[old["id"]])
        assert preview is not None and preview["outcome"] == "preview"
        done = await backend.forget(DESKTOP, NS, old["id"], "gone",
                                    confirmation=preview["confirmation"])
        assert done["outcome"] == "forgotten"


async def test_a_retiring_write_reads_the_gate_switch_itself_not_the_process_cache(
        db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, gate_cache_ttl_seconds=3600.0) as reader, \
            open_backend(db_dsn, tmp_path) as writer:
        reader.listen_dsn = None  # no NOTIFY reaches it: only its cache speaks for the gate
        memory = (await reader.remember(DESKTOP, NS, content="Staging is in eu-west-1"))[
            "memory"]
        arguments = gate_confirm.forget_arguments(memory["id"], "moved")
        assert await reader.gate_preview(DESKTOP, NS, "memory_forget", arguments,
                                         targets=[memory["id"]]) is None  # cached: off
        await writer.namespace_init(DESKTOP, NS, GATE_ON)
        assert await reader.gate_preview(DESKTOP, NS, "memory_forget", arguments,
                                         targets=[memory["id"]]) is None  # still cached

        with pytest.raises(ConfirmationRequired):
            await reader.forget(DESKTOP, NS, memory["id"], "moved")
        assert (await statuses(reader))[memory["id"]] == "ACTIVE"
        fresh = await reader.gate_preview(DESKTOP, NS, "memory_forget", arguments,
                                          targets=[memory["id"]], fresh=True)
        assert fresh is not None and fresh["would_change"][0]["id"] == memory["id"]


async def test_a_confirmation_is_spent_only_by_the_write_that_commits_with_it(db_dsn,
                                                                             tmp_path):
    async with open_backend(db_dsn, tmp_path) as backend:
        await backend.namespace_init(DESKTOP, NS, GATE_ON)
        old = (await backend.remember(DESKTOP, NS, content="Retries: three"))["memory"]
        holder = (await backend.remember(DESKTOP, NS, content="The retry policy", key="retry"))[
            "memory"]
        arguments = gate_confirm.remember_arguments(
            content="Retries: five, with backoff", kind="NOTE", title=None, tags=None,
            key="retry", supersedes=[old["id"]], client_request_id=None, expires_at=None,
            metadata=None, origin=None, model=None, derived_from=None, claim=None)
        preview = await backend.gate_preview(DESKTOP, NS, "memory_remember", arguments,
                                             targets=[old["id"]])
        assert preview is not None

        async def confirmed():
            return await backend.remember(DESKTOP, NS, **arguments,
                                          confirmation=preview["confirmation"])
        with pytest.raises(Conflict):  # the key is taken: the write and its spending roll back
            await confirmed()
        forget_holder = await backend.gate_preview(
            DESKTOP, NS, "memory_forget", gate_confirm.forget_arguments(holder["id"], "merged"),
            targets=[holder["id"]])
        await backend.forget(DESKTOP, NS, holder["id"], "merged",
                             confirmation=forget_holder["confirmation"])

        assert (await confirmed())["superseded"] == [old["id"]]
        with pytest.raises(MemhubError) as again:
            await confirmed()
        assert again.value.code == "CONFIRMATION_USED"
