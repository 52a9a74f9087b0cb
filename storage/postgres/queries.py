"""Named SQL blocks, parsed once at import from `storage/postgres/sql/*.sql`.

A file holds blocks introduced by `-- name: block_name`; the block is addressed as
`"<file stem>.<block_name>"`. Keeping SQL in files keeps it greppable and reviewable as SQL.
"""

from __future__ import annotations

import re
from pathlib import Path

SQL_DIR = Path(__file__).with_name("sql")
_HEADER = re.compile(r"^--\s*name:\s*([a-z0-9_]+)\s*$", re.MULTILINE)


def _parse(path: Path) -> dict[str, str]:
    text = path.read_text()
    blocks: dict[str, str] = {}
    matches = list(_HEADER.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip()
        name = f"{path.stem}.{match.group(1)}"
        if name in blocks:
            raise ValueError(f"duplicate SQL block {name} in {path}")
        blocks[name] = body
    return blocks


def load_all(directory: Path = SQL_DIR) -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        queries.update(_parse(path))
    return queries


QUERIES = load_all()


def q(name: str) -> str:
    """The SQL text of block `name` (`file.block`). KeyError names the missing block."""
    try:
        return QUERIES[name]
    except KeyError:
        raise KeyError(f"no SQL block named {name!r} in {SQL_DIR}") from None
