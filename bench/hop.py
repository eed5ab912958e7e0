"""Where a trivial call's round trip goes: stdio standalone vs the proxy hop vs raw HTTP.

Starts kioku on a fresh data dir and times, interleaved, N rounds of:
- ``standalone``: ``kioku serve --standalone`` over stdio (no proxy, no HTTP);
- ``proxied``: ``kioku serve`` over stdio (proxy -> Unix-socket HTTP -> daemon);
- ``http-new`` / ``http-keepalive``: the proxy's POST alone, a new connection per request
  vs one kept-alive connection (what the proxy hop costs without stdio);
for an MCP ping, a ``get_note`` of a missing id and an ``add_note`` of a new text (the
add's round trip minus ``get_note``'s is what the write path costs beyond the hops).

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/hop.py [--rounds 300] [--baseline-src DIR]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx
from harness import pct, serve_env, serve_params, stop_daemon
from mcp import Client

from mcp_gateway.common.keyfile import OWNER_HEADER, owner_key

ROOT = _HERE.parent
_MISSING = {"id": "01MISSING0000000000000000000"}


def _env(data_dir: Path, src: Path = ROOT) -> dict[str, str]:
    return serve_env(data_dir, src, {"KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S": "120"})


def _add(i: int, side: str) -> dict[str, str]:
    return {"text": f"hop {side}{i}: the build cache lives in .cache/{i} and expires daily"}


def _rpc(method: str, params: dict[str, Any], i: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode()


async def _rounds(
    calls: dict[str, Callable[[int], Awaitable[Any]]],
    rounds: int,
    samples: dict[str, list[float]],
    pause_s: float = 0.0,
) -> None:
    for i in range(rounds + 10):
        for name, call in calls.items():
            t = time.perf_counter()
            await call(i)
            if i >= 10:
                samples.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        if pause_s:
            await anyio.sleep(pause_s)


async def main(rounds: int, baseline: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="kioku-hop-") as tmp:
        shared, alone = Path(tmp) / "shared", Path(tmp) / "alone"
        samples: dict[str, list[float]] = {}
        async with AsyncExitStack() as stack:
            proxied = await stack.enter_async_context(
                Client(serve_params(_env(shared)), mode="legacy")
            )
            standalone = await stack.enter_async_context(
                Client(serve_params(_env(alone), standalone=True), mode="legacy")
            )
            old = None
            if baseline is not None:  # another checkout's proxy, same daemon
                old = await stack.enter_async_context(
                    Client(serve_params(_env(shared, baseline), baseline), mode="legacy")
                )
            sock = shared / "gateway.sock"
            headers = {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-06-18",
            }

            def http(keep: bool) -> httpx.AsyncClient:
                return httpx.AsyncClient(
                    transport=httpx.AsyncHTTPTransport(uds=str(sock)),
                    base_url="http://kioku-gateway",
                    # /mcp on the owner's socket needs the owner key (mcp_gateway/common/keyfile.py)
                    headers={OWNER_HEADER: owner_key(shared)},
                    limits=httpx.Limits(max_keepalive_connections=1 if keep else 0),
                )

            new = await stack.enter_async_context(http(False))
            kept = await stack.enter_async_context(http(True))
            calls: dict[str, Callable[[int], Awaitable[Any]]] = {
                "standalone ping": lambda i: standalone.send_ping(),
                "proxied ping": lambda i: proxied.send_ping(),
                "standalone get_note": lambda i: standalone.call_tool("get_note", _MISSING),
                "proxied get_note": lambda i: proxied.call_tool("get_note", _MISSING),
                "http-new ping": lambda i: new.post("/mcp", content=_rpc("ping", {}, i),
                                                    headers=headers),
                "http-keepalive ping": lambda i: kept.post("/mcp", content=_rpc("ping", {}, i),
                                                           headers=headers),
                "http-keepalive get_note": lambda i: kept.post(
                    "/mcp",
                    content=_rpc("tools/call", {"name": "get_note", "arguments": _MISSING}, i),
                    headers=headers,
                ),
            }  # fmt: skip
            adds: dict[str, Callable[[int], Awaitable[Any]]] = {
                "standalone add_note": lambda i: standalone.call_tool("add_note", _add(i, "s")),
                "proxied add_note": lambda i: proxied.call_tool("add_note", _add(i, "p")),
                "http-keepalive add_note": lambda i: kept.post(
                    "/mcp",
                    content=_rpc("tools/call", {"name": "add_note", "arguments": _add(i, "h")}, i),
                    headers=headers,
                ),
            }  # fmt: skip
            if old is not None:
                calls["baseline-proxied ping"] = lambda i: old.send_ping()
                calls["baseline-proxied get_note"] = lambda i: old.call_tool("get_note", _MISSING)
            await _rounds(calls, rounds, samples)
            # Each add queues an embedding (~10 ms of CPU): after the other calls, with
            # a pause per round, so neither phase times the other's background work.
            await _rounds(adds, rounds, samples, pause_s=0.08)
        stop_daemon(shared)
    load = os.getloadavg()[0]
    print(f"{rounds} interleaved rounds, load average {load:.1f} on {os.cpu_count()} cpus (ms)")
    for name, ms in samples.items():
        print(
            f"{name:24s} p50 {pct(ms, 0.5):6.2f}  p95 {pct(ms, 0.95):6.2f}  "
            f"p99 {pct(ms, 0.99):6.2f}"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--baseline-src", type=Path, help="also time this checkout's proxy")
    args = ap.parse_args()
    anyio.run(main, args.rounds, args.baseline_src)
