"""A TCP proxy in front of PostgreSQL that can lose a COMMIT's acknowledgement.

When armed, the proxy forwards a simple-protocol `COMMIT` to the server, waits for the
server's answer (so the transaction IS committed), swallows it and cuts the client's socket:
exactly the window where the client cannot know whether its write happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from psycopg.conninfo import conninfo_to_dict, make_conninfo

_COMMIT = b"COMMIT\x00"


class CuttingProxy:
    def __init__(self, dsn: str) -> None:
        info = conninfo_to_dict(dsn)
        self.upstream_host = info.get("host") or "localhost"
        self.upstream_port = int(info.get("port") or 5432)
        self.dsn = dsn
        self.cuts_left = 0
        self.cuts_done = 0
        self._server: asyncio.AbstractServer | None = None

    async def _open_upstream(self):
        if self.upstream_host.startswith("/"):
            path = os.path.join(self.upstream_host, f".s.PGSQL.{self.upstream_port}")
            return await asyncio.open_unix_connection(path)
        return await asyncio.open_connection(self.upstream_host, self.upstream_port)

    async def _handle(self, client_r, client_w) -> None:
        up_r, up_w = await self._open_upstream()
        state = {"cut": False}

        async def client_to_server():
            while data := await client_r.read(65536):
                if self.cuts_left > 0 and _COMMIT in data:
                    self.cuts_left -= 1
                    state["cut"] = True
                up_w.write(data)
                await up_w.drain()

        async def server_to_client():
            while data := await up_r.read(65536):
                if state["cut"]:
                    # The server answered COMMIT: it is durable. Drop the answer and the line.
                    self.cuts_done += 1
                    break
                client_w.write(data)
                await client_w.drain()

        tasks = [asyncio.create_task(client_to_server()), asyncio.create_task(server_to_client())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for writer in (client_w, up_w):
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return make_conninfo(self.dsn, host="127.0.0.1", port=str(port), sslmode="disable")

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
