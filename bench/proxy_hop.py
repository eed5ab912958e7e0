"""What the stdio proxy's hop costs: raw JSON-RPC lines through ``kioku serve`` against
the same lines sent straight to the owner's session socket, in one run.

One daemon, several sides speaking newline-delimited JSON-RPC (no MCP client library,
so only the hop is timed), interleaved with the order rotating each round:
- ``proxy``: this checkout's ``kioku serve`` over stdio pipes;
- ``baseline``: another checkout's ``kioku serve`` (``--baseline-src``), same daemon;
- ``socat``: a C relay between pipes and the socket (the floor for any relay process),
  when ``socat`` is installed;
- ``direct``: the session socket itself, no relay.

Each side gets a ping and an ``add_note``, back to back (gap 0) and after a pause (gap
30 ms: cores and caches go cold, as between an assistant's calls), idle and with two busy
processes beside them. p50 / p95 in ms.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/proxy_hop.py \
        [--rounds 80] [--baseline-src DIR]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

ROOT = _HERE.parent
sys.path.insert(0, str(ROOT))

from harness import SERVE, pct, serve_env, stop_daemon

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "proxy-hop", "version": "0"},
    },
}
GAPS = (0.0, 0.03)


class Side:
    def __init__(self, name: str, reader: asyncio.StreamReader, writer: Any) -> None:
        self.name, self.reader, self.writer, self.next_id = name, reader, writer, 100

    async def _send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message).encode() + b"\n")
        await self.writer.drain()

    async def call(self, method: str, params: dict[str, Any]) -> None:
        self.next_id += 1
        await self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while json.loads(await self.reader.readline()).get("id") != self.next_id:
            pass

    async def timed(self, method: str, params: dict[str, Any]) -> float:
        """One call's round trip, in ms."""
        started = time.perf_counter()
        await self.call(method, params)
        return (time.perf_counter() - started) * 1000

    async def start(self) -> Side:
        await self._send(INITIALIZE)
        await self.reader.readline()
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self


async def stdio_side(name: str, argv: list[str], env: dict[str, str], src: Path = ROOT) -> Side:
    # ``python -m`` puts the working directory first on sys.path: run in the checkout
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, cwd=src
    )
    assert proc.stdout is not None and proc.stdin is not None
    return await Side(name, proc.stdout, proc.stdin).start()


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


@contextlib.contextmanager
def hogs_running(count: int) -> Iterator[None]:
    """``count`` busy processes for the duration of the block."""
    hogs = start_hogs(count)
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


async def run(rounds: int, baseline: Path | None) -> dict[tuple[str, ...], list[float]]:
    tmp = Path(tempfile.mkdtemp(prefix="kioku-proxy-hop-"))
    data = tmp / "data"
    env = serve_env(data, ROOT)
    sides = [await stdio_side("proxy", SERVE, env)]
    await sides[0].call("tools/call", {"name": "add_note", "arguments": {"text": "warm up"}})
    sock = gw.GatewayPaths.for_settings(KiokuSettings(data_dir=data)).session_socket
    if baseline is not None:
        old_env = {**env, "PYTHONPATH": str(baseline)}
        sides.append(await stdio_side("baseline", SERVE, old_env, baseline))
    if shutil.which("socat"):
        sides.append(await stdio_side("socat", ["socat", "STDIO", f"UNIX-CONNECT:{sock}"], env))
    reader, writer = await asyncio.open_unix_connection(str(sock))
    sides.append(await Side("direct", reader, writer).start())
    samples: dict[tuple[str, ...], list[float]] = {}
    for phase in ("idle", "hog"):
        with hogs_running(2 if phase == "hog" else 0):
            await asyncio.sleep(0.5)
            for i in range(rounds + 5):
                for gap in GAPS:
                    for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                        for what in ("ping", "add"):
                            await asyncio.sleep(gap)
                            text = f"{side.name} {phase} {i} {gap}: the cache lives in .cache/{i}"
                            method, params = (
                                ("ping", {})
                                if what == "ping"
                                else (
                                    "tools/call",
                                    {"name": "add_note", "arguments": {"text": text}},
                                )
                            )
                            ms = await side.timed(method, params)
                            if i >= 5:  # the first rounds warm up
                                key = (phase, what, f"{gap * 1000:.0f} ms", side.name)
                                samples.setdefault(key, []).append(ms)
    stop_daemon(data)
    shutil.rmtree(tmp, ignore_errors=True)
    return samples


def print_ab(samples: dict[tuple[str, ...], list[float]], kinds: tuple[str, ...]) -> None:
    """p50 / p95 of this checkout and the baseline per phase and kind, and their ratio."""
    width = max(len(k) for k in kinds)
    for phase in ("idle", "hog"):
        for kind in kinds:
            this, base = samples[(phase, kind, "this")], samples[(phase, kind, "baseline")]
            ratio = pct(this, 0.5) / pct(base, 0.5)
            print(
                f"{phase:4s} {kind:{width}s} this {pct(this, 0.5):6.2f} / {pct(this, 0.95):6.2f}"
                f"  baseline {pct(base, 0.5):6.2f} / {pct(base, 0.95):6.2f}  ratio {ratio:.2f}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--baseline-src", type=Path, help="another checkout's proxy, same daemon")
    args = ap.parse_args()
    samples = asyncio.run(run(args.rounds, args.baseline_src))
    print(f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f} (ms, p50 / p95)")
    for (phase, what, gap, side), ms in sorted(samples.items()):
        p50, p95 = pct(ms, 0.5), pct(ms, 0.95)
        print(f"{phase:4s} {what:4s} gap {gap:5s} {side:8s} {p50:6.2f} / {p95:6.2f}")


if __name__ == "__main__":
    main()
