"""`ForgetStore`: retiring a memory as DELETED (memory_forget), over `MemoryStore` for what a
refused write reports (`_now`). One statement decides: the memory goes from ACTIVE or EXPIRED
to DELETED, or nothing changes and the answer says why (already forgotten, or superseded: a
CONFLICT naming its successor)."""

from __future__ import annotations

from typing import Any

from ....errors import Conflict, NotFound
from ... import gate_confirm
from ... import memory_input as mi
from ...memory_dicts import memory_dict
from ...principal import Principal, check_namespace
from ..rows import Conn, one
from .memories import MemoryStore
from .trust import persisted


class ForgetStore(MemoryStore):
    async def forget(
        self, principal: Principal, namespace: str, memory_id: str, reason: str, *,
        confirmation: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        nonce = await self._confirmation_nonce(
            principal, namespace, "memory_forget",
            gate_confirm.forget_arguments(memory_id, reason), confirmation)
        mid = mi.parse_id(memory_id)
        clean_reason = mi.check_reason(reason)
        ids = {"namespace": namespace, "id": mid}

        async def write(conn: Conn) -> dict[str, Any]:
            await self._admit_retirement(conn, namespace, nonce)
            row = await one(conn, "memories.forget", {**ids, "reason": clean_reason})
            if row is not None:
                return {"outcome": "forgotten", "memory": memory_dict(row)}
            now = await one(conn, "memories.get_by_id", ids)
            if now is None:
                raise NotFound(f"no memory {mid} in namespace {namespace!r}")
            if now["status"] == "DELETED":
                # The state asked for already holds: a success, as a retry must be.
                return {"outcome": "already_forgotten", "memory": memory_dict(now)}
            current = await self._now(conn, namespace, mid) or {}
            raise Conflict(
                "a SUPERSEDED memory is already retired; it stays in the audit trail",
                remedy="Forget its successor (details.superseded_by) if that is what you meant.",
                **current,
            )

        # Forgetting twice is harmless (already_forgotten), so a retry is safe; not with a
        # confirmation, which a commit lost in flight may have spent (UNKNOWN_OUTCOME instead).
        return persisted(await self._run(namespace, write, retry_safe=nonce is None),
                         await self.durable_commits())
