"""Artifacts through the real /mcp endpoint and GET /artifact/{sha256}."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid

import httpx
import pytest

from memhub.admin import import_
from memhub.errors import InvalidInput
from memhub.storage.sanitize import unwrap_untrusted
from memhub.storage.transfer_format import Writer
from tests.conftest import make_settings
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.server import thread_server

NS = "acme"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_put_then_get_round_trips_the_bytes_in_ranges(server, tokens):
    data = os.urandom(2 * 1024 * 1024 + 12345)  # three 1 MiB chunks
    sha = hashlib.sha256(data).hexdigest()
    async with server.client(tokens["web"]) as web:
        put = await call(web, "artifact_put", {"namespace": NS, "name": "dump.bin",
                                               "content_base64": b64(data),
                                               "media_type": "application/octet-stream"})
        assert put["outcome"] == "created" and put["artifact"]["sha256"] == sha
        assert put["artifact"]["size"] == len(data)
        got, offset = b"", 0
        while True:
            part = await call(web, "artifact_get", {"namespace": NS, "sha256": sha,
                                                    "offset": offset})
            got += base64.b64decode(part["content_base64"])
            offset += part["length"]
            if part["eof"]:
                break
        middle = await call(web, "artifact_get", {"namespace": NS, "sha256": sha,
                                                  "offset": 1024 * 1024 - 5, "length": 10})
    assert got == data
    assert base64.b64decode(middle["content_base64"]) == data[1024 * 1024 - 5:1024 * 1024 + 5]


async def test_the_same_content_is_stored_once_and_listed_only_by_its_namespaces(
    server, tokens, db_dsn, db_conn
):
    scoped_a = insert_token(db_dsn, "cursor", namespaces=["team-a"])
    scoped_b = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    async with server.client(scoped_a) as a:
        first = await call(a, "artifact_put", {"namespace": "team-a", "name": "log.txt",
                                               "text": "same bytes"})
        again = await call(a, "artifact_put", {"namespace": "team-a", "name": "log.txt",
                                               "text": "same bytes"})
        await call(a, "artifact_put", {"namespace": "team-a", "name": "secret.txt",
                                       "text": "only a has this"})
    async with server.client(scoped_b) as b:
        second = await call(b, "artifact_put", {"namespace": "team-b", "name": "copy.txt",
                                                "text": "same bytes"})
        listed_b = await call(b, "artifact_list", {"namespace": "team-b"})
        foreign = await error_of(b, "artifact_list", {"namespace": "team-a"})
        secret_sha = hashlib.sha256(b"only a has this").hexdigest()
        not_here = await error_of(b, "artifact_get", {"namespace": "team-b",
                                                      "sha256": secret_sha})
    # Stored once globally (the blob count below), yet b's answer does not say a holds it.
    assert first["bytes_stored"] is True and second["bytes_stored"] is True
    assert again["bytes_stored"] is False
    assert again["outcome"] == "exists"
    assert first["artifact"]["sha256"] == second["artifact"]["sha256"]
    assert [unwrap_untrusted(a["name"]) for a in listed_b["artifacts"]] == ["copy.txt"]
    assert foreign["code"] == "FORBIDDEN" and not_here["code"] == "NOT_FOUND"
    assert db_conn.execute("SELECT count(*) FROM artifact_blobs").fetchone()[0] == 2


@pytest.mark.parametrize("args, code", [
    ({"content_base64": "!!!not base64!!!"}, "INVALID_INPUT"),
    ({"content_base64": "aGk=", "text": "hi"}, "INVALID_INPUT"),
    ({}, "INVALID_INPUT"),
    ({"text": "hi", "media_type": "not a type"}, "INVALID_INPUT"),
    ({"text": "hi", "name": ""}, "INVALID_INPUT"),
    ({"text": "hi", "name": "n" * 256}, "TOO_LARGE"),
    ({"content_base64": 5}, "INVALID_INPUT"),
])
async def test_bad_artifact_input_is_refused_with_a_stable_code(server, tokens, args, code):
    async with server.client(tokens["web"]) as web:
        err = await error_of(web, "artifact_put", {"namespace": NS, "name": "f", **args})
    assert err["code"] == code


async def test_ranges_out_of_bounds_and_oversized_reads_are_refused(server, tokens):
    async with server.client(tokens["web"]) as web:
        sha = (await call(web, "artifact_put", {"namespace": NS, "name": "f",
                                                "text": "0123456789"}))["artifact"]["sha256"]
        past_end = await error_of(web, "artifact_get", {"namespace": NS, "sha256": sha,
                                                        "offset": 10})
        negative = await error_of(web, "artifact_get", {"namespace": NS, "sha256": sha,
                                                        "offset": -1})
        too_long = await error_of(web, "artifact_get", {"namespace": NS, "sha256": sha,
                                                        "length": 1024 * 1024 + 1})
        bad_sha = await error_of(web, "artifact_get", {"namespace": NS, "sha256": "xyz"})
        tail = await call(web, "artifact_get", {"namespace": NS, "sha256": sha, "offset": 8,
                                                "length": 100})
    assert past_end["code"] == "INVALID_INPUT" and past_end["details"]["size"] == 10
    assert negative["code"] == "INVALID_INPUT" and bad_sha["code"] == "INVALID_INPUT"
    assert too_long["code"] == "TOO_LARGE"
    assert base64.b64decode(tail["content_base64"]) == b"89" and tail["eof"] is True


async def test_an_artifact_over_the_cap_is_refused_before_it_is_stored(db_dsn, db_conn,
                                                                       tmp_path):
    settings = make_settings(db_dsn, tmp_path, artifact_max_bytes=1000)
    with thread_server(settings) as srv:
        token = insert_token(db_dsn, "web")
        async with srv.client(token) as c:
            text = await error_of(c, "artifact_put", {"namespace": NS, "name": "f",
                                                      "text": "x" * 1001})
            binary = await error_of(c, "artifact_put", {"namespace": NS, "name": "f",
                                                        "content_base64": b64(b"x" * 1001)})
            ok = await call(c, "artifact_put", {"namespace": NS, "name": "f",
                                                "text": "x" * 1000})
        # Far above cap * 4/3 + envelope: refused by the HTTP guard before the MCP layer.
        big = b"{" + b" " * (3 * 1024 * 1024) + b"}"
        headers = {"Authorization": f"Bearer {token}", "content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        declared = httpx.post(srv.mcp_url, headers=headers, content=big)

        def chunks():
            for i in range(0, len(big), 65536):
                yield big[i:i + 65536]

        streamed = httpx.post(srv.mcp_url, headers=headers, content=chunks())
    assert text["code"] == binary["code"] == "TOO_LARGE"
    assert text["details"]["max_bytes"] == 1000
    assert ok["outcome"] == "created"
    assert declared.status_code == 413 and declared.json()["error"]["code"] == "TOO_LARGE"
    assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "TOO_LARGE"
    assert db_conn.execute("SELECT count(*) FROM artifacts").fetchone()[0] == 1


async def test_the_http_endpoint_streams_bytes_with_and_without_range(server, tokens):
    data = os.urandom(1024 * 1024 + 500)
    async with server.client(tokens["web"]) as web:
        sha = (await call(web, "artifact_put", {
            "namespace": NS, "name": "shot.png", "content_base64": b64(data),
            "media_type": "image/png"}))["artifact"]["sha256"]
    url = f"{server.base_url}/artifact/{sha}"
    auth = {"Authorization": f"Bearer {tokens['web']}"}
    async with httpx.AsyncClient(timeout=30) as http:
        whole = await http.get(url, headers=auth)
        part = await http.get(url, headers={**auth, "Range": "bytes=1048570-1048579"})
        suffix = await http.get(url, headers={**auth, "Range": "bytes=-100"})
        open_end = await http.get(url, headers={**auth, "Range": "bytes=1048000-"})
        beyond = await http.get(url, headers={**auth, "Range": f"bytes={len(data)}-"})
        by_query = await http.get(f"{url}?token={tokens['web']}")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-type"] == "image/png"
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["x-content-type-options"] == "nosniff"
    assert part.status_code == 206 and part.content == data[1048570:1048580]
    assert part.headers["content-range"] == f"bytes 1048570-1048579/{len(data)}"
    assert suffix.status_code == 206 and suffix.content == data[-100:]
    assert open_end.status_code == 206 and open_end.content == data[1048000:]
    assert beyond.status_code == 416
    assert beyond.headers["content-range"] == f"bytes */{len(data)}"
    assert by_query.status_code == 200 and by_query.content == data


async def test_the_http_endpoint_needs_a_token_scoped_to_a_namespace_holding_it(
    server, tokens, db_dsn
):
    holder = insert_token(db_dsn, "cursor", namespaces=["team-a"])
    stranger = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    async with server.client(holder) as a:
        sha = (await call(a, "artifact_put", {"namespace": "team-a", "name": "f",
                                              "text": "private"}))["artifact"]["sha256"]
    url = f"{server.base_url}/artifact/{sha}"
    unknown = f"{server.base_url}/artifact/{'0' * 64}"
    async with httpx.AsyncClient() as http:
        anonymous = await http.get(url)
        as_stranger = await http.get(url, headers={"Authorization": f"Bearer {stranger}"})
        as_holder = await http.get(url, headers={"Authorization": f"Bearer {holder}"})
        as_unscoped = await http.get(url, headers={"Authorization": f"Bearer {tokens['web']}"})
        missing = await http.get(unknown, headers={"Authorization": f"Bearer {stranger}"})
    assert anonymous.status_code == 401
    assert as_stranger.status_code == 404 and missing.status_code == 404
    assert as_stranger.json() == missing.json()  # indistinguishable from "does not exist"
    assert as_holder.status_code == 200 and as_holder.content == b"private"
    assert as_holder.headers["content-type"].startswith("text/plain")
    assert as_unscoped.status_code == 200


def claiming(path, namespace: str, sha: str, data: bytes, size: int) -> None:
    """An export file of `namespace` whose one artifact names content `sha`, carrying `data`
    as that content's bytes and `size` as its size (a well-formed file, end record and all)."""
    with path.open("wb") as out:
        writer = Writer(out, namespace)
        writer.write({"record": "blob", "sha256": sha, "size": size})
        writer.write({"record": "blob_chunk", "sha256": sha, "offset": 0, "data": b64(data)})
        writer.write({"record": "artifact", "id": str(uuid.uuid4()), "sha256": sha,
                      "name": "loot.csv", "media_type": "text/csv", "size": size,
                      "author_client": "cursor",
                      "created_at": "2026-01-01T00:00:00.000000+00:00"})
        writer.finish()


SALARIES = b"name,salary\nalice,182000\nbob,176500\n"


@pytest.mark.parametrize("carried", ["other bytes of the same size", "a prefix and its size"])
async def test_an_import_naming_another_tenants_content_is_refused_and_reads_nothing(
    server, db_dsn, tmp_path, carried
):
    """The attack: tenant B imports a file that names the sha256 of A's file without carrying
    its bytes, to have the reference filed under B and read A's bytes over HTTP with B's
    token; or carries a prefix of them with a short size, for a short read."""
    holder = insert_token(db_dsn, "cursor", namespaces=["team-a"])
    thief = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    async with server.client(holder) as a:
        sha = (await call(a, "artifact_put", {"namespace": "team-a", "name": "salaries.csv",
                                              "text": SALARIES.decode()}))["artifact"]["sha256"]
    data = os.urandom(len(SALARIES)) if carried.startswith("other") else SALARIES[:10]
    path = tmp_path / "team-b.jsonl"
    claiming(path, "team-b", sha, data, len(data))
    with pytest.raises(InvalidInput) as caught:
        await import_.run(db_dsn, make_settings(db_dsn, tmp_path), str(path), namespace=None,
                          progress=False)
    assert caught.value.code == "INVALID_INPUT"
    async with httpx.AsyncClient() as http:
        read = await http.get(f"{server.base_url}/artifact/{sha}",
                              headers={"Authorization": f"Bearer {thief}"})
    assert read.status_code == 404
    async with server.client(thief) as b:
        assert (await call(b, "artifact_list", {"namespace": "team-b"}))["artifacts"] == []
