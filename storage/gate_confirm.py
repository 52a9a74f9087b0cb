"""Confirmation tokens of the intent gate's two-phase writes (docs/intent-gate.md).

A token says "this token may apply exactly these arguments of this tool in this namespace,
until it expires, once". It carries the namespace, the calling token's id, the tool, the
SHA-256 of the arguments' canonical JSON and a random nonce, signed with itsdangerous under a
key of its own (a stored server secret, salt "memhub.gate.confirm": an admin cookie never
verifies as a confirmation, nor the reverse). The signature's timestamp gives the lifetime;
the nonce, inserted once into gate_nonces, makes it single use. Holds no secret and no
argument value, only their hash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import Any

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from ..errors import (
    ConfirmationExpired,
    ConfirmationInvalid,
    ConfirmationMismatch,
    InvalidInput,
)

SALT = "memhub.gate.confirm"
SECRET_NAME = "gate.confirm"
TOKEN_MAX = 1000


def remember_arguments(*, content: Any, kind: Any, title: Any, tags: Any, key: Any,
                       supersedes: Any, client_request_id: Any, expires_at: Any,
                       metadata: Any, origin: Any, model: Any, derived_from: Any,
                       claim: Any, questions: Any = None) -> dict[str, Any]:
    """What a memory_remember confirmation is bound to: every argument but the confirmation
    (the MCP client's name is not an argument), as the caller sent it. `questions` only
    when given, so a confirmation issued without them stays valid for the same call."""
    return {"content": content, "kind": kind, "title": title, "tags": tags, "key": key,
            "supersedes": supersedes, "client_request_id": client_request_id,
            "expires_at": expires_at, "metadata": metadata, "origin": origin,
            "model": model, "derived_from": derived_from, "claim": claim,
            **({"questions": questions} if questions is not None else {})}


def forget_arguments(memory_id: Any, reason: Any) -> dict[str, Any]:
    """What a memory_forget confirmation is bound to."""
    return {"id": memory_id, "reason": reason}


def arguments_hash(tool: str, arguments: dict[str, Any]) -> str:
    """The canonical JSON (sorted keys, no spaces) of the tool and its arguments, hashed."""
    encoded = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True,
                         separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def issue(secret: bytes, namespace: str, token_id: int, tool: str,
          arguments: dict[str, Any]) -> str:
    return URLSafeTimedSerializer(secret, salt=SALT).dumps({
        "ns": namespace, "tok": token_id, "tool": tool,
        "args": arguments_hash(tool, arguments), "nonce": secrets.token_urlsafe(24)})


def verify(secret: bytes, confirmation: Any, namespace: str, token_id: int, tool: str,
           arguments: dict[str, Any], max_age: int) -> str:
    """The nonce to spend, once the token checks out. Raises CONFIRMATION_INVALID (not ours,
    or issued to another namespace, token or tool), CONFIRMATION_EXPIRED,
    CONFIRMATION_MISMATCH (the arguments differ from the previewed ones)."""
    if not isinstance(confirmation, str) or not 0 < len(confirmation) <= TOKEN_MAX:
        raise InvalidInput(f"confirmation must be a string of 1-{TOKEN_MAX} characters",
                           field="confirmation")
    try:
        claims = URLSafeTimedSerializer(secret, salt=SALT).loads(confirmation, max_age=max_age)
    except SignatureExpired:
        raise ConfirmationExpired("the confirmation has expired; nothing was written",
                                  ttl_seconds=max_age) from None
    except BadSignature:
        raise ConfirmationInvalid("the confirmation is not valid; nothing was written") from None
    if not isinstance(claims, dict) or claims.get("ns") != namespace \
            or claims.get("tok") != token_id or claims.get("tool") != tool:
        raise ConfirmationInvalid(
            "the confirmation was issued for another namespace, token or tool; nothing was "
            "written")
    if not hmac.compare_digest(str(claims.get("args")), arguments_hash(tool, arguments)):
        raise ConfirmationMismatch(
            "the arguments differ from the ones the confirmation was issued for; nothing was "
            "written")
    return str(claims["nonce"])
