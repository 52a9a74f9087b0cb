"""The product's own source files, as the installed `memhub` package names them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Top-level folders that are not part of the package.
NOT_PACKAGED = {"tests", "bench", "scripts", "docs", "migrations", "build"}


def product_modules() -> dict[str, Path]:
    """{dotted name under memhub: path} of every product module (`__init__` named as its
    package)."""
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if (rel.parts[0] in NOT_PACKAGED or rel.parts[0].startswith(".")
                or "node_modules" in rel.parts
                or any(part.endswith(".egg-info") for part in rel.parts)):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found
