"""The confirmation step before a dashboard action that cuts clients off (rotate a surface's
token, revoke a token, revoke an OAuth connection), as `memhub-admin` asks before them.

The dashboard's Rotate and Revoke are links to a page of their own (a GET: it changes nothing)
that says what will stop working; its button is the action's POST, with the session's CSRF
token and `confirm=yes`. A POST without `confirm=yes` (a stale page's form, a script, a
double click that outran the page) acts on nothing and answers this page instead. No
JavaScript is involved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONFIRMED = "yes"


@dataclass(frozen=True)
class Confirmation:
    """What the confirmation page shows, and where its button posts."""

    title: str
    facts: list[tuple[str, str]]
    consequence: str
    action: str
    button: str


def confirmed(form: dict[str, str]) -> bool:
    return form.get("confirm") == CONFIRMED


def _when(iso: str | None) -> str:
    return (iso or "")[:16].replace("T", " ")


def _scope(row: dict[str, Any]) -> list[tuple[str, str]]:
    return [("namespaces", ", ".join(row["namespaces"]) if row["namespaces"] else "all"),
            ("access", "read" if row["read_only"] else "read-write"),
            ("tools", row["tool_profile"])]


def rotation(surface: str, active: dict[str, Any] | None) -> Confirmation:
    if active is None:
        facts = [("surface", surface), ("current token", "none (revoked)")]
        consequence = (f"A new token is issued for {surface} and shown once, on the "
                       "dashboard.")
    else:
        facts = [("surface", surface),
                 ("current token", f"{active['prefix']}… (id {active['id']})"),
                 ("since", _when(active["created_at"]))]
        consequence = (f"The current {surface} token is revoked: every client using it is "
                       "refused from its next request until given the new one, which is "
                       "shown once, on the dashboard.")
    return Confirmation(f"Rotate the {surface} token?", facts, consequence,
                        f"/admin/surfaces/{surface}/rotate", "Rotate")


def token_revocation(token: dict[str, Any]) -> Confirmation:
    facts = [("token", f"{token['prefix']}… (id {token['id']})"),
             ("surface", token["surface"]), *_scope(token),
             ("label", token["label"] or ""), ("created", _when(token["created_at"]))]
    consequence = ("Every client using this token is refused from its next request. A "
                   "revoked token cannot be restored: "
                   + ("rotate the surface to issue a new one." if token["kind"] == "surface"
                      else "create a new one if it is needed again."))
    return Confirmation(f"Revoke token {token['id']}?", facts, consequence,
                        f"/admin/tokens/{token['id']}/revoke", "Revoke")


def grant_revocation(grant: dict[str, Any]) -> Confirmation:
    facts = [("client", grant["client_name"]), ("surface", grant["surface"]),
             *_scope(grant), ("approved", _when(grant["created_at"])),
             ("last token", _when(grant["last_issued"]))]
    consequence = ("Every access token of this connection is refused from its next request, "
                   "and its refresh tokens are refused: the client must ask for consent "
                   "again.")
    return Confirmation(f"Revoke the connection of {grant['client_name']}?", facts,
                        consequence, f"/admin/oauth/grants/{grant['id']}/revoke", "Revoke")
