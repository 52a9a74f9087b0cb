"""A listing's page cursor (memory_list, handoff_list, session_list, artifact_list) is sealed:
the row number it carries is one sequence for every namespace, so a readable cursor would
count what all tenants insert. It opens only for the listing and the namespace it came from."""

from __future__ import annotations

import base64
import struct

import pytest

from memhub.errors import InvalidInput
from tests.support.memories import DESKTOP, NS, open_backend

OTHER = "other-team"


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        yield b


async def two_pages(backend, namespace=NS):
    for i in range(3):
        await backend.remember(DESKTOP, namespace, content=f"memory {i} of {namespace}")
    return (await backend.list_memories(DESKTOP, namespace, limit=2))["next_cursor"]


async def test_a_list_cursor_carries_no_row_number(backend, db_conn):
    first = await two_pages(backend)
    again = (await backend.list_memories(DESKTOP, NS, limit=2))["next_cursor"]
    assert first != again  # one position, two cursors: nothing to compare
    db_conn.execute("SET memhub.namespaces = '*'")
    seqs = [row[0] for row in db_conn.execute("SELECT seq FROM memories")]
    for cursor in (first, again):
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        for seq in seqs:  # as the unsealed "v1:<seq>" spelled it, or as binary
            # (":1" alone is two bytes a random ciphertext holds one time in a few hundred)
            assert f"v1:{seq}".encode() not in raw
            assert struct.pack(">Q", seq) not in raw and struct.pack("<Q", seq) not in raw
    # And the page after it is the right one.
    rest = await backend.list_memories(DESKTOP, NS, limit=2, cursor=first)
    assert len(rest["memories"]) == 1 and rest["next_cursor"] is None


async def test_a_list_cursor_of_another_namespace_is_invalid_input(backend):
    foreign = await two_pages(backend, OTHER)
    await two_pages(backend)
    with pytest.raises(InvalidInput) as caught:
        await backend.list_memories(DESKTOP, NS, limit=2, cursor=foreign)
    assert caught.value.details["field"] == "cursor" and caught.value.remedy


async def test_a_cursor_of_another_listing_is_invalid_input(backend):
    for i in range(3):
        await backend.handoff_save(DESKTOP, NS, title=f"handoff {i}", body="body")
    handoffs = (await backend.handoff_list(DESKTOP, NS, limit=2))["next_cursor"]
    assert handoffs is not None
    with pytest.raises(InvalidInput):
        await backend.list_memories(DESKTOP, NS, limit=2, cursor=handoffs)
