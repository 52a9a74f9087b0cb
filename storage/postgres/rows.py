"""Run a named SQL block and fetch its rows: the two helpers every storage area uses."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import DictRow

from .queries import q

# Every pooled connection returns rows as dicts (PgCore's pool sets row_factory=dict_row).
Conn = psycopg.AsyncConnection[DictRow]


async def one(conn: Conn, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
    cur = await conn.execute(q(name), params)
    return await cur.fetchone()


async def many(conn: Conn, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur = await conn.execute(q(name), params)
    return await cur.fetchall()


async def row_of(cur: psycopg.AsyncCursor[DictRow]) -> dict[str, Any]:
    """The row a statement always returns (an aggregate, an upsert's RETURNING): none is a bug
    in memhub, never a caller's mistake, and is answered INTERNAL."""
    row = await cur.fetchone()
    if row is None:
        raise RuntimeError("a statement that always returns a row returned none")
    return row


async def one_row(conn: Conn, name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The row block `name` always returns (see row_of)."""
    return await row_of(await conn.execute(q(name), params))
