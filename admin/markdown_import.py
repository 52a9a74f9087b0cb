"""`memhub-admin import --markdown FILE... --namespace NS`: seed a namespace from the notes a
team already keeps (CLAUDE.md, AGENTS.md, .cursorrules, ADRs).

What becomes a memory (docs/operations.md, "Seeding from markdown notes"):
- A file is cut into sections at its headings (`#` to `######`, not inside code fences);
  the text before the first heading is a section titled with the file's name. YAML front
  matter is skipped.
- A section whose body is only a list gives one memory per top-level item (nested items and
  continuation lines stay with their item); any other section (prose, code, tables) is one
  memory. A memory's title is its heading path ("Conventions > Tests"); empty sections give
  nothing.
- An ADR (a file with a "Decision" heading and a "Context", "Status" or "Consequences" one)
  is one DECISION: the whole record, titled with its first heading.

The kind is guessed, and the output says from what, first rule first: an ADR -> DECISION;
an open "[ ]" item -> TODO, a done "[x]" one -> NOTE; text opening with TODO/FIXME, or a
"TODO"/"Roadmap"/"Backlog" heading -> TODO; a "Decision(s)"/"ADR" heading, or text opening
with "Decision:"/"We decided"/"We chose" -> DECISION; must, always, never, do not, don't,
should, avoid or prefer in the text, or a "Conventions"/"Rules"/"Guidelines"/"Style" heading
-> CONVENTION; an "Architecture"/"Stack"/"Overview"/"Structure"/"Layout"/"Setup"/"Facts"
heading -> FACT; anything else -> NOTE. `--dry-run` shows all this and writes nothing.

Each memory goes through the normal write path (`remember`: screening, dedup by content) as
the surface "markdown-import", with its file and section as metadata and a client_request_id
derived from everything it sends: running the import again replays those answers and writes
nothing, and the same note in two files is stored once (the second is deduplicated).
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import MemhubError, NotFound
from ..storage.memory_input import MAX_TITLE
from ..storage.principal import Principal

AUTHOR = Principal(token_id=0, surface="markdown-import", namespaces=None)

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_CHECKBOX = re.compile(r"^\[( |x|X)\]\s+")
_ADR_PARTS = ("context", "status", "consequences")

_TODO_TEXT = re.compile(r"^\s*(TODO|FIXME)\b", re.I)
_TODO_HEADING = re.compile(r"\b(todos?|roadmap|backlog)\b", re.I)
_DECISION_HEADING = re.compile(r"\b(decisions?|adrs?)\b", re.I)
_DECISION_TEXT = re.compile(r"^\s*(decision:|decided\b|we decided\b|we chose\b)", re.I)
_CONVENTION_TEXT = re.compile(
    r"\b(must|always|never|do not|don't|should|avoid|prefer)\b", re.I)
_CONVENTION_HEADING = re.compile(r"\b(conventions?|rules|guidelines|style)\b", re.I)
_FACT_HEADING = re.compile(
    r"\b(architecture|stack|overview|structure|layout|setup|facts?)\b", re.I)


@dataclass
class Note:
    source: str
    line: int
    section: str | None
    title: str
    content: str
    kind: str
    why: str


def guess_kind(section: str | None, text: str, *, box: str | None = None) -> tuple[str, str]:
    """(kind, the reason shown to the operator). `box`: a list item's checkbox, " " or "x"."""
    heading = section or ""
    if box == " ":
        return "TODO", 'an open "[ ]" item'
    if box is not None:
        return "NOTE", 'a done "[x]" item'
    if m := _TODO_TEXT.search(text):
        return "TODO", f'opens with "{m.group(1)}"'
    if m := _TODO_HEADING.search(heading):
        return "TODO", f'under a "{m.group(1)}" heading'
    if m := _DECISION_HEADING.search(heading):
        return "DECISION", f'under a "{m.group(1)}" heading'
    if m := _DECISION_TEXT.search(text):
        return "DECISION", f'opens with "{m.group(1)}"'
    if m := _CONVENTION_TEXT.search(text):
        return "CONVENTION", f'says "{m.group(1).lower()}"'
    if m := _CONVENTION_HEADING.search(heading):
        return "CONVENTION", f'under a "{m.group(1)}" heading'
    if m := _FACT_HEADING.search(heading):
        return "FACT", f'under a "{m.group(1)}" heading'
    return "NOTE", "no rule matched"


def _sections(lines: list[str]) -> list[tuple[list[str], int, list[tuple[int, str]]]]:
    """[(heading path, line of the heading, [(line, text) of the body])]."""
    out: list[tuple[list[str], int, list[tuple[int, str]]]] = [([], 1, [])]
    stack: list[tuple[int, str]] = []
    fenced = None
    for number, line in enumerate(lines, start=1):
        fence = _FENCE.match(line)
        if fence and (fenced is None or fence.group(1) == fenced):
            fenced = fence.group(1) if fenced is None else None
        elif fenced is None and (heading := _HEADING.match(line)):
            level = len(heading.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading.group(2)))
            out.append(([h for _, h in stack], number, []))
            continue
        out[-1][2].append((number, line))
    return out


def _items(body: list[tuple[int, str]]) -> list[tuple[int, str]] | None:
    """The top-level items of a body that is only a list, or None when it is not."""
    items: list[tuple[int, list[str]]] = []
    for number, line in body:
        if not line.strip():
            if items:
                items[-1][1].append("")
            continue
        top = _ITEM.match(line)
        if top and not line.startswith((" " * 4, "\t")) and (
                not items or not line[:1].isspace()):
            items.append((number, [top.group(1)]))
        elif items and line[:1].isspace():
            items[-1][1].append(line)
        else:
            return None
    return [(n, "\n".join([first, textwrap.dedent("\n".join(rest))]).strip())
            for n, (first, *rest) in items] or None


def parse(text: str, source: str) -> list[Note]:
    """The notes of one markdown file (the rules in the module docstring)."""
    lines = text.replace("\r\n", "\n").split("\n")
    skip = 0
    if lines and lines[0].strip() == "---":
        ends = [i for i, line in enumerate(lines[1:], start=1) if line.strip() in ("---", "...")]
        if ends:
            skip = ends[0] + 1
    lines = [""] * skip + lines[skip:]
    sections = _sections(lines)
    name = Path(source).name
    headings = [h[-1].strip().lower() for h, _, _ in sections if h]
    if any(h.startswith("decision") for h in headings) and any(
            h.startswith(part) for h in headings for part in _ADR_PARTS):
        first = next((h[0] for h, _, _ in sections if h), name)
        content = "\n".join(line for _, line in sections[0][2]).strip()
        parts = [content] if content else []
        for path, _, body in sections[1:]:
            if path == [first]:
                text_ = "\n".join(line for _, line in body).strip()
            else:
                text_ = ("#" * len(path) + " " + path[-1] + "\n"
                         + "\n".join(line for _, line in body)).strip()
            if text_:
                parts.append(text_)
        if not parts:
            return []
        return [Note(source, 1, first, first[:MAX_TITLE], "\n\n".join(parts), "DECISION",
                     'an ADR ("Decision" and "Context"/"Status"/"Consequences" headings)')]
    notes = []
    for path, start, body in sections:
        section = " > ".join(path) if path else None
        title = (section or name)[:MAX_TITLE]
        items = _items(body)
        if items is not None:
            for number, item in items:
                box = _CHECKBOX.match(item)
                item = item[box.end():] if box else item
                if item.strip():
                    kind, why = guess_kind(section, item,
                                           box=box.group(1).lower() if box else None)
                    notes.append(Note(source, number, section, title, item, kind, why))
            continue
        content = "\n".join(line for _, line in body).strip()
        if content:
            first_line = next(n for n, line in body if line.strip())
            kind, why = guess_kind(section, content)
            notes.append(Note(source, first_line if not path else start, section, title, content,
                              kind, why))
    return notes


def read_notes(files: list[str]) -> list[Note]:
    """Every note of every file, in order. Raises NOT_FOUND before anything is written."""
    notes = []
    for file in files:
        path = Path(file)
        if not path.is_file():
            raise NotFound(f"no file {file}", remedy="Give paths of markdown files.")
        notes += parse(path.read_text(encoding="utf-8", errors="replace"), path.as_posix())
    return notes


def request_id(namespace: str, note: Note) -> str:
    """The same note sent again is the same request (replayed), anything changed a new one."""
    sent = {"namespace": namespace, "kind": note.kind, "title": note.title,
            "content": note.content, "metadata": metadata(note)}
    digest = hashlib.sha256(json.dumps(sent, sort_keys=True).encode("utf-8")).hexdigest()
    return f"markdown-import:{digest}"


def metadata(note: Note) -> dict[str, Any]:
    return {"source": note.source, "section": note.section}


async def run(backend, namespace: str, notes: list[Note]) -> list[dict[str, Any]]:
    """Remember each note; one refused (too large, bad input) does not stop the others."""
    results = []
    for note in notes:
        row: dict[str, Any] = asdict(note)
        try:
            answer = await backend.remember(
                AUTHOR, namespace, content=note.content, kind=note.kind, title=note.title,
                metadata=metadata(note), client_request_id=request_id(namespace, note),
                origin="imported")
        except MemhubError as err:
            row.update(outcome="refused", error={"code": err.code, "message": err.message})
        else:
            row.update(outcome=answer["outcome"], id=answer["memory"]["id"],
                       quarantined=answer["quarantine"]["quarantined"])
            if answer["outcome"] == "replayed":
                row["original_outcome"] = answer.get("original_outcome")
        results.append(row)
    return results


def describe(results: list[dict[str, Any]], *, dry_run: bool) -> str:
    lines = []
    for r in results:
        outcome = "would write" if dry_run else r["outcome"]
        first = r["content"].splitlines()[0] if r["content"] else ""
        first = (r["title"] if first.startswith("#") else first)[:60]
        note = f"  [{r['error']['code']}]" if r.get("error") else (
            "  [quarantined]" if r.get("quarantined") else "")
        lines.append(f"{outcome:<12} {r['kind']:<10} {r['source']}:{r['line']}  {first}  "
                     f"({r['why']}){note}")
    counts: dict[str, int] = {}
    for r in results:
        key = "would write" if dry_run else r["outcome"]
        counts[key] = counts.get(key, 0) + 1
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()) or "no notes found")
    return "\n".join(lines)
