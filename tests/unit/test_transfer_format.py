"""The export file's envelope, without a database: canonical lines, and a scan that refuses
what an import must not start on (a newer version, a file cut short or changed, records out of
order or twice)."""

from __future__ import annotations

import io
import tracemalloc
import uuid

import pytest

from memhub.errors import InvalidInput, TooLarge, UnsupportedFormat
from memhub.storage.transfer_format import (
    LINE_MAX,
    VERSION,
    Remap,
    Writer,
    encode,
    read_header,
    records,
    scan,
)

A, B = str(uuid.uuid4()), str(uuid.uuid4())


def file_of(records, tmp_path, namespace="acme"):
    buffer = io.BytesIO()
    writer = Writer(buffer, namespace)
    for record in records:
        writer.write(record)
    writer.finish()
    path = tmp_path / "x.jsonl"
    path.write_bytes(buffer.getvalue())
    return path


def test_a_line_is_canonical_json_whatever_the_key_order():
    assert encode({"b": 1, "a": "é"}) == encode({"a": "é", "b": 1}) == '{"a":"é","b":1}\n'.encode()


def test_a_whole_file_scans_with_its_ids_and_counts(tmp_path):
    path = file_of([{"record": "memory", "id": A}, {"record": "handoff", "id": B}], tmp_path)
    found = scan(path)
    assert found.namespace == "acme" and found.ids == {A: "memory", B: "handoff"}
    assert found.counts["memory"] == 1 and found.counts["handoff"] == 1


def test_a_newer_version_is_unsupported_before_anything_else_is_read(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_bytes(encode({"record": "header", "format": "memhub-export",
                             "version": VERSION + 1, "namespace": "acme"}) + b"garbage")
    with pytest.raises(UnsupportedFormat) as caught:
        scan(path)
    assert caught.value.code == "UNSUPPORTED_FORMAT" and caught.value.remedy


@pytest.mark.parametrize("damage", ["empty", "not-json", "no-header", "cut-mid-line",
                                    "no-end", "changed", "after-end", "twice", "out-of-order"])
def test_a_damaged_file_is_refused(tmp_path, damage):
    good = file_of([{"record": "memory", "id": A}, {"record": "handoff", "id": B}], tmp_path)
    data = good.read_bytes()
    lines = data.splitlines(keepends=True)
    broken = {
        "empty": b"",
        "not-json": b"{oops\n",
        "no-header": b"".join(lines[1:]),
        "cut-mid-line": data[:-5],
        "no-end": b"".join(lines[:-1]),
        "changed": data.replace(A.encode(), str(uuid.uuid4()).encode()),
        "after-end": data + lines[1],
    }.get(damage)
    if damage == "twice":
        broken = file_of([{"record": "memory", "id": A}, {"record": "memory", "id": A}],
                         tmp_path).read_bytes()
    if damage == "out-of-order":
        broken = file_of([{"record": "handoff", "id": B}, {"record": "memory", "id": A}],
                         tmp_path).read_bytes()
    path = tmp_path / "broken.jsonl"
    path.write_bytes(broken)
    with pytest.raises(InvalidInput) as caught:
        scan(path)
    assert caught.value.code == "INVALID_INPUT" and "export" in caught.value.remedy


def test_ids_are_kept_in_their_namespace_and_derived_under_another_name():
    assert Remap("acme", "acme", {A: "memory"}).id(A) == A
    renamed = Remap("acme", "copy", {A: "memory"})
    assert renamed.id(A) != A and renamed.id(A) == Remap("acme", "copy", {A: "memory"}).id(A)
    assert Remap("acme", "other", {A: "memory"}).id(A) != renamed.id(A)


def test_a_ref_follows_only_when_it_names_a_record_of_the_file():
    renamed = Remap("acme", "copy", {A: "memory"})
    assert renamed.ref(A) == renamed.id(A)
    assert renamed.ref(B) == B and renamed.ref("docs/x.md") == "docs/x.md"


def test_a_source_follows_only_when_it_names_a_record_of_that_kind_in_the_file():
    renamed = Remap("acme", "copy", {A: "session"})
    assert renamed.source("session", A) == renamed.id(A)
    assert renamed.source("memory", A) == A  # a memory of that id is not in the file
    assert renamed.source("session", B) == B


def header_then(tmp_path, size: int):
    """A file whose second line is `size` bytes with no end of line, made sparse: nothing of
    it is in memory until something reads it."""
    path = tmp_path / "long.jsonl"
    with path.open("wb") as out:
        out.write(encode({"record": "header", "format": "memhub-export", "version": VERSION,
                          "namespace": "acme"}))
        out.truncate(out.tell() + size)
    return path


@pytest.mark.parametrize("reader", [scan, lambda path: list(records(path))])
def test_a_line_over_the_formats_maximum_is_refused_with_its_number_before_it_is_read_whole(
        tmp_path, reader):
    path = header_then(tmp_path, 3 * LINE_MAX)
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge) as caught:
            reader(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.code == "TOO_LARGE"
    assert caught.value.details["line"] == 2 and caught.value.details["max_bytes"] == LINE_MAX
    assert peak < 3 * LINE_MAX  # the line itself was never held whole


def test_the_header_is_read_within_the_same_bound(tmp_path):
    path = tmp_path / "one-line.jsonl"
    with path.open("wb") as out:
        out.truncate(LINE_MAX + 1)
    with pytest.raises(TooLarge) as caught:
        read_header(path)
    assert caught.value.details["line"] == 1


def test_an_export_refuses_to_write_a_line_an_import_could_not_read():
    writer = Writer(io.BytesIO(), "acme")
    with pytest.raises(TooLarge) as caught:
        writer.write({"record": "memory", "id": A, "revisions": [{"content": "x" * LINE_MAX}]})
    assert caught.value.code == "TOO_LARGE" and caught.value.details["id"] == A
    assert writer.counts["memory"] == 0
