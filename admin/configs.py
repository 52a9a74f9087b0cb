"""Ready-to-paste client configurations, per surface. Each works as pasted once the real token
is in it; before that the token is the literal placeholder `<token>`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote

PLACEHOLDER = "<token>"


@dataclass(frozen=True)
class Snippet:
    key: str  # stable id used in element ids and tests
    title: str
    where: str  # where to paste it
    text: str


def claude_web(mcp_url: str, token: str) -> Snippet:
    value = token if token == PLACEHOLDER else quote(token, safe="")
    return Snippet(
        "claude-web",
        "claude.ai connector URL",
        "claude.ai → Settings → Connectors → Add custom connector",
        f"{mcp_url}?token={value}",
    )


def claude_code(mcp_url: str, token: str) -> Snippet:
    return Snippet(
        "claude-code",
        "Claude Code command",
        "a terminal",
        f'claude mcp add --transport http memhub {mcp_url} '
        f'--header "Authorization: Bearer {token}"',
    )


def claude_desktop(mcp_url: str, token: str) -> Snippet:
    config = {
        "mcpServers": {
            "memhub": {
                "command": "npx",
                # mcp-remote's documented form: Claude Desktop on Windows mangles spaces inside
                # `args`, so the header's value travels in an environment variable.
                "args": ["-y", "mcp-remote", mcp_url, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": f"Bearer {token}"},
            }
        }
    }
    return Snippet(
        "claude-desktop",
        "Claude Desktop JSON",
        "claude_desktop_config.json",
        json.dumps(config, indent=2),
    )


def cursor(mcp_url: str, token: str) -> Snippet:
    config = {
        "mcpServers": {"memhub": {"url": mcp_url, "headers": {"Authorization": f"Bearer {token}"}}}
    }
    return Snippet(
        "cursor", "Cursor .cursor/mcp.json", ".cursor/mcp.json", json.dumps(config, indent=2)
    )


BY_SURFACE = {
    "web": (claude_web,),
    "desktop-cli": (claude_code, claude_desktop),
    "cursor": (cursor,),
}
EVERY = (claude_web, claude_code, claude_desktop, cursor)


def snippets(surface: str | None, mcp_url: str, token: str | None) -> list[Snippet]:
    """The snippets for a surface card (every client for an extra token)."""
    makers = BY_SURFACE.get(surface or "", EVERY)
    return [make(mcp_url, token or PLACEHOLDER) for make in makers]
