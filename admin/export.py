"""`memhub-admin export NAMESPACE [--out FILE]`: one namespace to one portable file.

The format is storage/transfer_format.py's (docs/operations.md, "Export and import"). The
file appears under its name only once it is complete: it is written beside it as
`<name>.partial` and renamed at the end, so an interrupted export never leaves a file that
looks finished (and an import would refuse it anyway: it has no end record).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..errors import Conflict, InvalidInput
from ..storage.postgres.operator.transfer import export_namespace
from ..storage.principal import NAMESPACE_RE


def default_path(namespace: str) -> Path:
    return Path(f"memhub-{namespace}.jsonl")


async def run(dsn: str, namespace: str, out: str | None, *, force: bool, progress: bool
              ) -> dict[str, Any]:
    """Export `namespace` to `out` (a path, '-' for stdout, None for the default name).
    Raises INVALID_INPUT, CONFLICT (the file exists and not `force`), NOT_FOUND."""
    if not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput(f"{namespace!r} is not a namespace name", field="namespace")
    if out == "-":
        with _bar(progress) as bar:
            report = await export_namespace(dsn, namespace, sys.stdout.buffer,
                                            start=_start(bar), advance=bar.update)
        sys.stdout.buffer.flush()
        return {**report, "file": "-"}
    path = Path(out) if out else default_path(namespace)
    if path.exists() and not force:
        raise Conflict(f"{path} exists", remedy="Pass --force to replace it, or choose "
                                                "another --out.", file=str(path))
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as handle, _bar(progress) as bar:
            report = await export_namespace(dsn, namespace, handle, start=_start(bar),
                                            advance=bar.update)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return {**report, "file": str(path)}


def _bar(progress: bool) -> tqdm:
    return tqdm(total=0, unit="record", desc="exporting", disable=not progress,
                file=sys.stderr)


def _start(bar: tqdm):
    def start(total: int) -> None:
        bar.total = total
        bar.refresh()
    return start


def describe(report: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {kind}" for kind, n in report["counts"].items() if n)
    return (f"exported namespace {report['namespace']} to {report['file']}: "
            f"{counts or 'nothing'} ({report['bytes']} bytes, sha256 {report['sha256']})")

