"""The namespace export file: JSON Lines, one record per line, versioned (docs/operations.md,
"Export and import").

    {"format":"memhub-export","namespace":"acme","record":"header","version":3}
    {"record":"profile", ...}           the namespace's profile, when it has one (version 2)
    {"record":"memory", ...}            every memory, oldest first, with its revisions (and
                                        its claim, version 3: an older memhub would drop it)
    {"record":"handoff", ...}           oldest first
    {"record":"session", ...}           oldest first, each followed by its events
    {"record":"session_event", ...}
    {"record":"blob", ...}              an artifact's bytes, before the first artifact naming
    {"record":"blob_chunk", ...}        them, in base64 chunks of at most 1 MiB
    {"record":"artifact", ...}
    {"counts":{...},"record":"end","sha256":"..."}

No line is longer than LINE_MAX bytes: an export refuses to write a longer one, and an import
refuses it having read no more than that.

Every line is canonical JSON (keys sorted, no spaces, UTF-8, times in UTC with microseconds),
so one namespace exported twice gives the same bytes. The end record counts the records by
kind and carries the SHA-256 of every byte before its own line: a file cut short, or changed
by hand, is refused before anything is written.

Pure functions, no database: `scan` checks a whole file before an import opens a transaction.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .. import bounded_json
from ..errors import InvalidInput, TooLarge, UnsupportedFormat
from .principal import NAMESPACE_RE

FORMAT = "memhub-export"
VERSION = 3
KINDS = ("profile", "memory", "handoff", "session", "session_event", "blob", "blob_chunk",
         "artifact")
# Kinds a version introduced: an older file holds none, and its end record does not count them.
_SINCE = {"profile": 2}
# The order records come in: a kind never follows one of a higher rank.
_RANK = {"profile": 0, "memory": 1, "handoff": 2, "session": 3, "session_event": 3, "blob": 4,
         "blob_chunk": 4, "artifact": 4}
# New ids for a namespace imported under another name: uuid5(REMAP, "<namespace>/<old id>").
REMAP = uuid.UUID("6f1d3c52-3a43-5bd4-9d0c-8a7e0c6b2f11")
# The longest line of the format, its end of line included. A blob chunk is under 1.4 MB; a
# memory carries every revision, so it has no natural bound: this one holds thousands of
# revisions at the largest content, and keeps what a reader holds of one line bounded.
LINE_MAX = 64 * 1024 * 1024

DAMAGED = ("The file is damaged or is not a memhub export: export the namespace again "
           "(memhub-admin export) and import the new file.")


def encode(record: dict[str, Any]) -> bytes:
    """One canonical line."""
    return (json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                       allow_nan=False) + "\n").encode("utf-8")


def header(namespace: str) -> dict[str, Any]:
    return {"record": "header", "format": FORMAT, "version": VERSION, "namespace": namespace}


class Writer:
    """Writes records to `out`, counting them and hashing every byte for the end record."""

    def __init__(self, out: BinaryIO, namespace: str) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.counts = {kind: 0 for kind in KINDS}
        self.bytes = 0
        self._put(header(namespace))

    def _put(self, record: dict[str, Any]) -> int:
        line = encode(record)
        if len(line) > LINE_MAX:
            raise TooLarge(
                f"the {record['record']} record {record.get('id', '')} would be a line of "
                f"{len(line)} bytes, over the export format's maximum of {LINE_MAX}",
                remedy="An import could not read such a line, so no file is written. If the "
                       "record must go, `memhub-admin purge` it, then export again.",
                kind=record["record"], id=record.get("id"), max_bytes=LINE_MAX)
        self.out.write(line)
        self.digest.update(line)
        self.bytes += len(line)
        return len(line)

    def write(self, record: dict[str, Any]) -> int:
        written = self._put(record)
        self.counts[record["record"]] += 1
        return written

    def finish(self) -> dict[str, Any]:
        end = {"record": "end", "counts": self.counts, "sha256": self.digest.hexdigest()}
        line = encode(end)
        self.out.write(line)
        self.bytes += len(line)
        return {"counts": self.counts, "sha256": end["sha256"], "bytes": self.bytes}


def parse_line(number: int, raw: bytes) -> dict[str, Any]:
    if not raw.endswith(b"\n"):
        raise InvalidInput(f"line {number} is cut short (no end of line): the file is "
                           "incomplete", remedy=DAMAGED, line=number)
    try:
        record = bounded_json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput(f"line {number} is not JSON", remedy=DAMAGED, line=number) from None
    if not isinstance(record, dict) or not isinstance(record.get("record"), str):
        raise InvalidInput(f"line {number} is not a record", remedy=DAMAGED, line=number)
    return record


def check_header(record: dict[str, Any]) -> str:
    """The file's namespace. UNSUPPORTED_FORMAT for a version this memhub does not read."""
    if record.get("record") != "header" or record.get("format") != FORMAT:
        raise InvalidInput("the first line is not a memhub export header", remedy=DAMAGED,
                           line=1)
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidInput("the header's version is not a positive integer", remedy=DAMAGED,
                           line=1)
    if version > VERSION:
        raise UnsupportedFormat(
            f"the file is export format version {version}; this memhub reads version "
            f"{VERSION} and older",
            remedy=f"Import it with a memhub that reads version {version} (upgrade memhub "
                   "here), or export again from a memhub that writes this version.",
            version=version, supported=VERSION,
        )
    namespace = record.get("namespace")
    if not isinstance(namespace, str) or not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput("the header names no valid namespace", remedy=DAMAGED, line=1)
    return namespace


def lines(source: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of every line of `source`, none read beyond LINE_MAX bytes: a
    longer one is refused (TOO_LARGE, with its number) before the rest of it is read."""
    number = 0
    while raw := source.readline(LINE_MAX + 1):
        number += 1
        if len(raw) > LINE_MAX:
            raise TooLarge(f"line {number} is longer than {LINE_MAX} bytes, the export "
                           "format's maximum", remedy=DAMAGED, line=number,
                           max_bytes=LINE_MAX)
        yield number, raw


def read_header(path: Path) -> str:
    """The namespace the file's header names (nothing past the first line is read)."""
    with path.open("rb") as source:
        first = next(lines(source), None)
    if first is None:
        raise InvalidInput("the file is empty", remedy=DAMAGED)
    return check_header(parse_line(*first))


@dataclass
class Scan:
    """What an import needs to know before it writes: the file's namespace, every id its
    records carry with the kind of its record (so references to them can follow a renamed
    namespace), the counts."""

    namespace: str
    ids: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def scan(path: Path, advance: Callable[[int], object] | None = None) -> Scan:
    """Check the whole file: a header this memhub reads, known records in the documented
    order, an end record last whose counts and SHA-256 match. Raises UNSUPPORTED_FORMAT or
    INVALID_INPUT (with the line) and writes nothing anywhere."""
    digest = hashlib.sha256()
    counts = {kind: 0 for kind in KINDS}
    result: Scan | None = None
    end: dict[str, Any] | None = None
    rank = 0
    with path.open("rb") as source:
        for number, raw in lines(source):
            if advance is not None:
                advance(len(raw))
            if end is not None:
                raise InvalidInput(f"line {number} follows the end record", remedy=DAMAGED,
                                   line=number)
            record = parse_line(number, raw)
            if result is None:
                result = Scan(check_header(record))
                version = record["version"]
                digest.update(raw)
                continue
            kind = record["record"]
            if kind == "end":
                end = record
                continue
            if kind not in counts or _SINCE.get(kind, 1) > version:
                raise InvalidInput(f"line {number} is a record of unknown kind {kind[:40]!r}",
                                   remedy=DAMAGED, line=number)
            if kind == "profile" and counts["profile"]:
                raise InvalidInput(f"line {number}: a second profile record", remedy=DAMAGED,
                                   line=number)
            if _RANK[kind] < rank:
                raise InvalidInput(f"line {number}: a {kind} record out of order",
                                   remedy=DAMAGED, line=number)
            rank = _RANK[kind]
            counts[kind] += 1
            digest.update(raw)
            if kind in ("memory", "handoff", "session", "artifact"):
                record_id = _id_of(record, number)
                if record_id in result.ids:
                    raise InvalidInput(f"line {number}: id {record_id} appears twice",
                                       remedy=DAMAGED, line=number)
                result.ids[record_id] = kind
    if result is None:
        raise InvalidInput("the file is empty", remedy=DAMAGED)
    if end is None:
        raise InvalidInput("the file ends before its end record: it was cut short",
                           remedy=DAMAGED)
    counted = {k: n for k, n in counts.items() if _SINCE.get(k, 1) <= version}
    if end.get("counts") != counted or end.get("sha256") != digest.hexdigest():
        raise InvalidInput("the file's records do not match its end record (counts or "
                           "SHA-256): it was changed or damaged", remedy=DAMAGED)
    result.counts = counts
    return result


def records(path: Path, advance: Callable[[int], object] | None = None
            ) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every record between the header and the end record; call
    after `scan` has passed."""
    with path.open("rb") as source:
        for number, raw in lines(source):
            if advance is not None:
                advance(len(raw))
            record = parse_line(number, raw)
            if number == 1:
                continue
            if record["record"] == "end":
                return
            yield number, record


def _id_of(record: dict[str, Any], number: int) -> str:
    try:
        return str(uuid.UUID(str(record["id"])))
    except (KeyError, ValueError):
        raise InvalidInput(f"line {number} has no valid id", remedy=DAMAGED,
                           line=number) from None


class Remap:
    """Ids as the target namespace stores them: the file's own when it keeps its namespace;
    under another name, uuid5(REMAP, "<namespace>/<id>") for every id the file carries, so
    two copies of a namespace in one database never share an id, a second import of the same
    file maps to the same ids (and changes nothing), and every link inside the file
    (supersession, a session's events, a handoff's refs naming a record, a memory's
    derived_from naming one) follows. `ids` is the file's, each with its record's kind."""

    def __init__(self, source: str, target: str, ids: dict[str, str]) -> None:
        self.renamed = source != target
        self.target = target
        self.ids = ids

    def id(self, value: str) -> str:
        if not self.renamed:
            return value
        return str(uuid.uuid5(REMAP, f"{self.target}/{value}"))

    def ref(self, value: str) -> str:
        """A handoff ref: remapped when it names a record of the file, kept otherwise."""
        try:
            named = str(uuid.UUID(value.strip()))
        except ValueError:
            return value
        return self.id(named) if named in self.ids else value

    def source(self, kind: str, value: str) -> str:
        """A derived_from entry's id: remapped when it names a record of that kind in the
        file; kept otherwise, and the import checks that it names one of the target
        namespace, as memory_remember does."""
        return self.id(value) if self.ids.get(value) == kind else value
