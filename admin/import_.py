"""`memhub-admin import FILE [--namespace NEW] [--yes]`: restore an export file (without
--namespace, into the namespace its header names, once the operator confirms it:
admin/transfer_cli.py).

Two passes over the file, each with a progress bar on a terminal: the first checks it whole
(storage/transfer_format.scan: a version this memhub reads, nothing cut short or changed)
without touching the database; the second writes it in one transaction
(storage/postgres/operator/restore.py: what is kept, what is refused, why the owner connection).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..config import Settings
from ..errors import InvalidInput, NotFound
from ..storage.postgres.operator.restore import import_file
from ..storage.principal import NAMESPACE_RE
from ..storage.transfer_format import read_header, scan


def _existing(file: str) -> Path:
    path = Path(file)
    if not path.is_file():
        raise NotFound(f"no file {file}", remedy="Give the path of a file written by "
                                                 "`memhub-admin export`.")
    return path


def file_namespace(file: str) -> str:
    """The namespace the file's header names, where an import without --namespace writes.
    Raises NOT_FOUND, UNSUPPORTED_FORMAT, INVALID_INPUT, TOO_LARGE."""
    return read_header(_existing(file))


async def run(dsn: str, settings: Settings, file: str, *, namespace: str | None,
              progress: bool) -> dict[str, Any]:
    """Raises NOT_FOUND (no such file), UNSUPPORTED_FORMAT, INVALID_INPUT, CONFLICT, and
    whatever restore.import_file raises; in every case nothing was written."""
    path = _existing(file)
    if namespace is not None and not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput(f"{namespace!r} is not a namespace name", field="namespace")
    size = path.stat().st_size
    with _bar(size, "checking", progress) as bar:
        plan = scan(path, bar.update)
    with _bar(size, "importing", progress) as bar:
        report = await import_file(dsn, path, plan, namespace=namespace,
                                   max_content_chars=settings.max_content_chars,
                                   model=settings.embed_model, advance=bar.update)
    return {**report, "file": str(path)}


def _bar(size: int, desc: str, progress: bool) -> tqdm:
    return tqdm(total=size, unit="B", unit_scale=True, desc=desc, disable=not progress,
                file=sys.stderr)


def describe(report: dict[str, Any]) -> str:
    created = ", ".join(f"{n} {k}" for k, n in report["created"].items() if n) or "nothing"
    unchanged = ", ".join(f"{n} {k}" for k, n in report["unchanged"].items() if n)
    renamed = (f" (from namespace {report['source_namespace']}, with new ids)"
               if report["renamed"] else "")
    lines = [f"imported {report['file']} into namespace {report['namespace']}{renamed}: "
             f"created {created}"]
    if unchanged:
        lines.append(f"already there and identical: {unchanged}")
    blobs = report["blobs"]
    if blobs["stored"] or blobs["present"]:
        lines.append(f"artifact contents: {blobs['stored']} stored, {blobs['present']} "
                     "already held")
    lines.append(f"embeddings queued: {report['embeddings_queued']} (a running server embeds "
                 "them; without one, run `memhub-admin backfill`)")
    return "\n".join(lines)
