"""The streamable HTTP gateway under load, and its defaults (token, loopback, Host).

``KIOKU_LOAD_SECONDS`` sets the load duration (60 in CI; e.g. 10 locally). Run with
``-s`` to see the latency table; it is also written to ``<tmp>/load_latency.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from tests.http_server import http_client
from tests.realproc import KIOKU, db_rows, http_proc, kioku_env

CLIENTS = 20
TOKEN = "load-test-token-0123456789abcdef"
MIX = ["add_note"] * 4 + ["search_memory"] * 3 + ["record_add", "record_search", "record_show"]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Load:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.records: list[str] = []

    async def call(self, client: Client, tool: str, args: dict[str, object]) -> dict | None:
        started = time.perf_counter()
        try:
            res = await client.call_tool(tool, args)
        except Exception as exc:  # a protocol/transport failure is an error too
            self.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
            return None
        self.latency[tool].append((time.perf_counter() - started) * 1000)
        if res.is_error:
            self.errors.append(f"{tool}: {res.content}")
            return None
        return res.structured_content

    async def client(self, url: str, n: int, until: float) -> None:
        rng = random.Random(n)
        async with http_client(url, TOKEN) as client:
            i = 0
            while time.monotonic() < until:
                i += 1
                tool = rng.choice(MIX)
                if tool == "add_note":
                    out = await self.call(
                        client, "add_note", {"text": f"load client {n} note {i}: deploy with care"}
                    )
                    if out:
                        self.notes.append(out["id"])
                elif tool == "search_memory":
                    await self.call(client, "search_memory", {"query": f"deploy care client {n}"})
                elif tool == "record_add":
                    out = await self.call(
                        client, "record_add", {"type": "audit", "title": f"load audit {n}-{i}"}
                    )
                    if out:
                        self.records.append(out["record"]["id"])
                elif tool == "record_search":
                    await self.call(client, "record_search", {"query": f"audit {n}"})
                elif self.records:
                    await self.call(client, "record_show", {"id": rng.choice(self.records)})

    def table(self) -> dict[str, dict[str, float]]:
        return {
            tool: {
                "n": len(v),
                "p50_ms": round(statistics.median(v), 1),
                "p95_ms": round(_percentile(v, 0.95), 1),
                "p99_ms": round(_percentile(v, 0.99), 1),
            }
            for tool, v in sorted(self.latency.items())
        }


@pytest.mark.slow
async def test_twenty_clients_mixed_load(tmp_path: Path) -> None:
    seconds = float(os.environ.get("KIOKU_LOAD_SECONDS", "60"))
    data = tmp_path / "data"
    load = Load()
    with http_proc(data, KIOKU_HTTP__TOKEN=TOKEN) as gw:
        until = time.monotonic() + seconds
        await asyncio.gather(*(load.client(gw.url, n, until) for n in range(CLIENTS)))
        assert not load.errors, load.errors[:5]

        # Every acknowledged write is there exactly once.
        async with http_client(gw.url, TOKEN) as client:
            for nid in load.notes:
                res = await client.call_tool("get_note", {"id": nid})
                assert not res.is_error, res.content
            for rid in load.records:
                res = await client.call_tool("record_show", {"id": rid})
                assert not res.is_error, res.content
        assert TOKEN not in gw.stderr()

    assert len(set(load.notes)) == len(load.notes)
    assert db_rows(data, "SELECT count(*) FROM notes")[0][0] == len(load.notes)
    assert db_rows(data, "SELECT count(*) FROM records")[0][0] == len(load.records)

    table = load.table()
    report = {"seconds": seconds, "clients": CLIENTS, "tools": table}
    (tmp_path / "load_latency.json").write_text(json.dumps(report, indent=2))
    print(f"\nHTTP load: {CLIENTS} clients for {seconds:g} s -> {tmp_path / 'load_latency.json'}")
    print(f"{'tool':<15}{'n':>7}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for tool, row in table.items():
        print(f"{tool:<15}{row['n']:>7}{row['p50_ms']:>9}{row['p95_ms']:>9}{row['p99_ms']:>9}")


async def test_token_required_and_checked(tmp_path: Path) -> None:
    with http_proc(tmp_path / "data", KIOKU_HTTP__TOKEN=TOKEN) as gw:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:
            missing = await http.post(gw.url, json=body, headers=headers)
            wrong = await http.post(
                gw.url, json=body, headers={**headers, "authorization": "Bearer nope"}
            )
            rebinding = await http.post(
                gw.url,
                json=body,
                headers={**headers, "authorization": f"Bearer {TOKEN}", "host": "evil.example"},
            )
        assert missing.status_code == 401
        assert wrong.status_code == 401
        # plain bearer tokens: no OAuth server is advertised (its metadata would 404)
        for refused in (missing, wrong):
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith("Bearer ") and "resource_metadata" not in challenge
        async with httpx2.AsyncClient(timeout=30) as http:
            base = gw.url.removesuffix("/mcp")
            for path in ("oauth-protected-resource/mcp", "oauth-authorization-server"):
                assert (await http.get(f"{base}/.well-known/{path}")).status_code == 404
        assert rebinding.status_code in (400, 421)  # DNS-rebinding protection: Host refused
        async with http_client(gw.url, TOKEN) as client:
            assert (await client.list_tools()).tools
        assert TOKEN not in gw.stderr() and "nope" not in gw.stderr()


def test_refuses_non_loopback_without_token(tmp_path: Path) -> None:
    proc = subprocess.run(
        [KIOKU, "serve", "--http", "--host", "0.0.0.0", "--port", "1"],
        env=kioku_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "token" in proc.stderr.lower() and "Traceback" not in proc.stderr
