"""`GateReviewStore`: what tier 2 of the intent gate shows its model (a PostgresBackend mixin
over `GateStore`; storage/gate_review.py bounds it, usecases/gate_review.py asks the model,
docs/intent-gate.md, Tier 2).

Two short reads, each in a transaction of its own that has ended (its connection back in the
pool) before this answers: the model is asked afterwards, so a slow model never holds a
connection.
"""

from __future__ import annotations

from typing import Any

from ... import gate_review as gr
from ... import memory_input as mi
from ...gate_input import lookup_text
from ...principal import Principal, check_namespace
from ...sanitize import unwrap_all
from ..rows import Conn, many
from .gate import GateStore


class GateReviewStore(GateStore):
    """Implements `GateBackend.gate_review_material`."""

    async def gate_review_material(self, principal: Principal, namespace: str, tool: str,
                                   arguments: dict[str, Any], *,
                                   targets: list[str]) -> dict[str, Any] | None:
        check_namespace(principal, namespace, write=True)
        if not (await self._gate_entry(namespace)).tier2:
            return None
        ids = ([mi.parse_id(t) for t in targets] if tool == "memory_forget"
               else mi.check_supersedes(targets))

        async def read(conn: Conn) -> list[dict[str, Any]]:
            return await many(conn, "gate.review_memories", {
                "namespace": namespace, "ids": ids, "limit": gr.MEMORIES_MAX})

        rows = await self._run(namespace, read, retry_safe=True)
        shown = [gr.memory_of(r, r["role"]) for r in rows]
        change = gr.change_of(tool, arguments)
        lookup = lookup_text(gr.lookup_of(change, [m for m in shown if m["role"] == "retired"]))
        if lookup:
            found = await self.recall(principal, namespace, lookup, limit=gr.RELATED_MAX)
            seen = {m["id"] for m in shown}
            for result in found["results"]:
                memory = unwrap_all(result["memory"])
                if memory["id"] not in seen and memory["status"] == "ACTIVE" \
                        and not memory.get("quarantined"):
                    seen.add(memory["id"])
                    shown.append(gr.memory_of(memory, "related"))
        return {"tool": tool, "change": change, "memories": shown[:gr.MEMORIES_MAX]}
