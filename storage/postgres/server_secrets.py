"""Server secrets: random keys made once per database and shared by every process on it (the
dashboard's cookie signing key, OAuth's, the intent gate's confirmation key)."""

from __future__ import annotations

import secrets

from .core import PgCore
from .queries import q
from .rows import Conn, row_of
from .scope import ALL_NAMESPACES


class ServerSecrets(PgCore):
    """`admin_secret`: the base of every store that signs or checks something."""

    async def admin_secret(self, name: str) -> bytes:
        async def write(conn: Conn) -> bytes:
            await conn.execute(
                q("admin.insert_secret_if_absent"),
                {"name": name, "value": secrets.token_bytes(32)},
            )
            cur = await conn.execute(q("admin.get_secret"), {"name": name})
            return bytes((await row_of(cur))["value"])

        # Insert-once is idempotent: a replay after a lost connection reads the winner's value.
        return await self._run(ALL_NAMESPACES, write, retry_safe=True)
