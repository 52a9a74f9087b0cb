"""Run a named SQL block and fetch its rows: the two helpers every storage area uses."""

from __future__ import annotations

from typing import Any

import psycopg

from .queries import q

Conn = psycopg.AsyncConnection


async def one(conn: Conn, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
    cur = await conn.execute(q(name), params)
    return await cur.fetchone()


async def many(conn: Conn, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    cur = await conn.execute(q(name), params)
    return await cur.fetchall()
