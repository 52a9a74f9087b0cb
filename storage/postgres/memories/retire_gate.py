"""`RetireGate`: the intent gate's rule where a memory is retired (docs/intent-gate.md).

In a namespace whose profile turns `intent_gate` on, a write that retires memories (remember
with `supersedes`, forget) goes ahead only with the confirmation of its preview, spent in the
write's own transaction. The rule sits here, in the storage write, not in a tool: every caller
of `remember` and `forget` (the tools, the curator, a script) meets it, and migration 0037's
trigger refuses any retirement whose transaction spent no nonce, whatever statement tries it.

The switch is read in the write's transaction, never from the per-process gate cache: a cache
that has not yet heard of the gate being turned on must not let a retirement through.
"""

from __future__ import annotations

from typing import Any

from ....errors import ConfirmationRequired, ConfirmationUsed
from ... import gate_confirm
from ...principal import Principal
from ..rows import Conn, one
from ..server_secrets import ServerSecrets


class RetireGate(ServerSecrets):
    """The confirmation key and the check every retiring write makes."""

    _gate_secret_value: bytes | None = None

    async def _gate_secret(self) -> bytes:
        if self._gate_secret_value is None:
            self._gate_secret_value = await self.admin_secret(gate_confirm.SECRET_NAME)
        return self._gate_secret_value

    async def _confirmation_nonce(self, principal: Principal, namespace: str, tool: str,
                                  arguments: dict[str, Any], confirmation: Any) -> str | None:
        """Before the write's transaction: the nonce `confirmation` carries once it checks out
        for exactly these arguments, None without a confirmation. Raises INVALID_INPUT,
        CONFIRMATION_INVALID, CONFIRMATION_EXPIRED, CONFIRMATION_MISMATCH."""
        if confirmation is None:
            return None
        return gate_confirm.verify(await self._gate_secret(), confirmation, namespace,
                                   principal.token_id, tool, arguments,
                                   self.settings.gate_confirm_ttl_seconds)

    async def _admit_retirement(self, conn: Conn, namespace: str, nonce: str | None) -> None:
        """In the write's transaction, before it retires anything: spend the confirmation's
        nonce (it commits with the write, or neither does), or, without one, refuse when the
        namespace's gate is on. Raises CONFIRMATION_USED, CONFIRMATION_REQUIRED."""
        if nonce is not None:
            if await one(conn, "gate.spend_nonce", {"namespace": namespace,
                                                    "nonce": nonce}) is None:
                raise ConfirmationUsed("this confirmation was already used; nothing was written")
            return
        profile = await one(conn, "gate.gate_profile", {"namespace": namespace})
        if profile is not None and profile["intent_gate"] == "on":
            raise ConfirmationRequired(
                f"namespace {namespace!r} has the intent gate on: this write retires memories "
                "and needs the confirmation of its preview; nothing was written")
