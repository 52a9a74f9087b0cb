"""Server secrets: random keys made once per database and shared by every process on it (the
dashboard's cookie signing key, OAuth's, the intent gate's confirmation key, the key that
seals cursors)."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from ...config import Settings
from ..cursors import SECRET_NAME as CURSOR_SECRET
from ..cursors import CursorSeal
from .core import PgCore
from .queries import q
from .rows import Conn, row_of
from .scope import ALL_NAMESPACES

if TYPE_CHECKING:
    from ...embedding.embedder import Embedder


class ServerSecrets(PgCore):
    """`admin_secret`: the base of every store that signs or checks something."""

    def __init__(self, settings: Settings, dsn: str, *, embedder: Embedder | None = None
                 ) -> None:
        super().__init__(settings, dsn, embedder=embedder)
        self._server_keys: dict[str, bytes] = {}

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

    async def server_key(self, name: str) -> bytes:
        """`admin_secret(name)`, read from the database once per process: a stored secret is
        never replaced, and a key needed on every read must not cost a round trip each time."""
        key = self._server_keys.get(name)
        if key is None:
            key = self._server_keys[name] = await self.admin_secret(name)
        return key

    async def cursor_seal(self, purpose: str, namespace: str) -> CursorSeal:
        """What seals and opens the cursors of one listing of one namespace."""
        return CursorSeal(await self.server_key(CURSOR_SECRET), purpose, namespace)
