"""The README names every MCP tool and every memhub-admin command, and no link in README.md or
docs/ points at a file or heading that does not exist: documentation that cannot drift from the
code (the settings have their own test, test_settings_documented.py)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from memhub.admin.cli import build_parser
from memhub.config import Settings
from memhub.runtime import Runtime
from memhub.tools.server import build_mcp

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").rglob("*.md"))]

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


async def tool_names() -> list[str]:
    """The tools the server lists, as a client sees them (no database needed)."""
    mcp = build_mcp(Runtime(settings=Settings(), version="test"))
    return sorted(tool.name for tool in await mcp.list_tools())


def admin_commands(parser: argparse.ArgumentParser | None = None, prefix: str = "") -> list[str]:
    """Every leaf command of memhub-admin, e.g. "status", "token rotate"."""
    parser = parser or build_parser()
    commands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = admin_commands(sub, f"{prefix}{name} ")
                commands += nested or [f"{prefix}{name}"]
    return commands


def missing_tools(readme: str, names: list[str]) -> list[str]:
    """Tools without a row of their own in the README's tool table."""
    return [name for name in names if not re.search(rf"^\| `{re.escape(name)}` \|", readme, re.M)]


def missing_commands(readme: str, commands: list[str]) -> list[str]:
    return [c for c in commands if not re.search(rf"memhub-admin {re.escape(c)}\b", readme)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    for heading in headings(text):
        base = slug(heading)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.append(line.lstrip("#").strip())
    return out


def links(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out += _LINK.findall(line)
    return out


def broken_links(document: Path) -> list[str]:
    """Relative links of `document` whose file, or heading within it, does not exist."""
    broken = []
    for target in links(document.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text()):
            broken.append(target)
    return broken


async def test_every_mcp_tool_has_a_row_in_the_readme():
    names = await tool_names()
    assert len(names) >= 21
    assert missing_tools(README.read_text(), names) == []


def test_every_memhub_admin_command_is_in_the_readme():
    commands = admin_commands()
    assert {"status", "migrate", "backfill", "token list", "token create", "token rotate",
            "token revoke"} <= set(commands)
    assert missing_commands(README.read_text(), commands) == []


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = {str(d.relative_to(ROOT)): broken_links(d) for d in DOCUMENTS}
    assert {d: b for d, b in broken.items() if b} == {}


async def test_a_tool_or_command_left_out_of_the_readme_is_reported():
    readme = README.read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `memory_revise` |"))
    assert missing_tools(readme.replace(row + "\n", ""), await tool_names()) == ["memory_revise"]
    without = re.sub(r"memhub-admin token rotate\b", "memhub-admin", readme)
    assert missing_commands(without, admin_commands()) == ["token rotate"]


def test_a_link_to_a_missing_file_or_heading_is_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Two words\n")
    doc = tmp_path / "doc.md"
    doc.write_text("# Doc\n\n[ok](other.md#two-words) [here](#doc) [web](https://example.com)\n"
                   "[gone](missing.md) [no heading](other.md#three) [no anchor](#nowhere)\n"
                   "```\n[in code](ignored.md)\n```\n")
    assert broken_links(doc) == ["missing.md", "other.md#three", "#nowhere"]


def test_anchors_follow_githubs_slugs():
    assert slug("Embedded: `DATABASE_URL` unset") == "embedded-database_url-unset"
    assert slug("Handoffs, sessions and artifacts") == "handoffs-sessions-and-artifacts"
    assert slug("Write -> searchable by meaning") == "write---searchable-by-meaning"
    assert anchors("# A\n## A\n") == {"a", "a-1"}


def test_the_readme_stays_short():
    """README.md is for users and short (at most 18 KB); details live in docs/."""
    assert len(README.read_bytes()) <= 18 * 1024
