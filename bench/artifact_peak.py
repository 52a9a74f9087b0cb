#!/usr/bin/env python3
"""The server's peak memory for one artifact_put of the full cap, through a real MCP client.

    .venv/bin/python -m bench.artifact_peak [--mb 50] [--out FILE]

One fresh memhub (its own process, bench/common.py), measured once its embedding model has
loaded (the model loads in the background after start; its memory is not the put's). The
server's peak resident set (Linux VmHWM) is reset just before the call (/proc/PID/clear_refs)
and read after it; also reported: the resident set before, the time of the put and of reading
it back in 1 MiB ranges.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import time
from pathlib import Path

import psutil

from bench.common import (
    default_out,
    local_memhub,
    machine,
    mcp_client,
    provenance,
    write_result,
)

MODEL_WAIT_SECONDS = 300


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _server_pid(port: int) -> int:
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return conn.pid
    raise RuntimeError(f"no process listens on {port}")


async def measure(base: str, size: int) -> dict[str, object]:
    pid = _server_pid(int(base.rsplit(":", 1)[1]))
    data = os.urandom(size)
    content = base64.b64encode(data).decode()
    async with mcp_client(base) as client:
        deadline = time.monotonic() + MODEL_WAIT_SECONDS
        while (await client.call_tool("stats", {})).structured_content[
                "embedding_model"]["state"] == "loading":
            if time.monotonic() > deadline:
                raise RuntimeError("the embedding model did not finish loading")
            await asyncio.sleep(0.5)
        await client.call_tool("artifact_list", {"namespace": "bench"})  # warm
        before = _status_kib(pid, "VmRSS")
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # peak := current
        started = time.perf_counter()
        put = (await client.call_tool("artifact_put", {
            "namespace": "bench", "name": "big.bin",
            "content_base64": content})).structured_content
        put_s = time.perf_counter() - started
        peak = _status_kib(pid, "VmHWM")
        digest, offset, started = hashlib.sha256(), 0, time.perf_counter()
        while True:
            part = (await client.call_tool("artifact_get", {
                "namespace": "bench", "sha256": put["artifact"]["sha256"],
                "offset": offset})).structured_content
            digest.update(base64.b64decode(part["content_base64"]))
            offset += part["length"]
            if part["eof"]:
                break
        get_s = time.perf_counter() - started
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    return {"artifact_bytes": size, "request_bytes_approx": len(content) + 200,
            "rss_before_mib": round(before / 1024, 1), "peak_rss_mib": round(peak / 1024, 1),
            "peak_above_before_mib": round((peak - before) / 1024, 1),
            "put_seconds": round(put_s, 2), "get_seconds": round(get_s, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50, help="artifact size in MiB (the cap)")
    parser.add_argument("--out", default=None,
                        help="result file (default bench/results/artifact-peak-DATE-COMMIT.json)")
    args = parser.parse_args()
    size = args.mb * 1024 * 1024
    with local_memhub(artifact_max_bytes=size) as (base, _settings, _dsn):
        result = asyncio.run(measure(base, size))
    report = {"what": "server peak RSS of one artifact_put of the cap", **provenance(),
              "machine": machine(), "result": result}
    path = write_result(args.out or default_out("artifact-peak"), report)
    print(json.dumps(report, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
