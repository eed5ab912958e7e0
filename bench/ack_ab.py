"""An owner's own acknowledgement, two checkouts side by side: ping and ``add_note``
sent straight to each daemon's session socket (no proxy, no MCP client library).

Two daemons, one per checkout (this one and ``--baseline-src``), each on its own fresh
data dir, called alternately (the order flips every round) with a pause between calls
(``--gap``, 30 ms: as between an assistant's calls, so each add's follow-ups -- its
lexical write, its embedding -- run in the pause, or not, as they would). Idle, then
with two busy processes beside them. p50 / p95 in ms; what differs is the daemon.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/ack_ab.py \\
        --baseline-src DIR [--rounds 120] [--gap 0.03] [--env SIDE:KEY=VALUE]

``--env this:KEY=VALUE`` / ``--env baseline:KEY=VALUE`` set a side's own settings: one
checkout against itself with a setting on and off (``--baseline-src . --env
this:KIOKU_SEARCH__FAST_FIRST=true --env baseline:KIOKU_SEARCH__FAST_FIRST=false``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import asyncio
import os
import shutil
import tempfile

ROOT = _HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(_HERE))

from harness import SERVE, serve_env, stop_daemon
from proxy_hop import Side, hogs_running, print_ab, stdio_side

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw


async def daemon(name: str, src: Path, data: Path, settings: dict[str, str]) -> Side:
    """Start ``src``'s daemon on ``data`` (through its own proxy) and connect to its
    session socket; ``settings``: that side's own environment."""
    proxy = await stdio_side(f"{name}-proxy", SERVE, serve_env(data, src, settings), src)
    await proxy.call("tools/call", {"name": "add_note", "arguments": {"text": "warm up"}})
    sock = gw.GatewayPaths.for_settings(KiokuSettings(data_dir=data)).session_socket
    reader, writer = await asyncio.open_unix_connection(str(sock))
    return await Side(name, reader, writer).start()


def call_of(what: str, text: str) -> tuple[str, dict[str, object]]:
    if what == "ping":
        return "ping", {}
    return "tools/call", {"name": "add_note", "arguments": {"text": text}}


async def run(
    rounds: int, gap: float, baseline: Path, envs: list[str]
) -> dict[tuple[str, ...], list[float]]:
    tmp = Path(tempfile.mkdtemp(prefix="kioku-ack-ab-"))
    checkouts = {"this": ROOT, "baseline": baseline}
    own: dict[str, dict[str, str]] = {name: {} for name in checkouts}
    for item in envs:
        side, _, pair = item.partition(":")
        key, _, value = pair.partition("=")
        own[side][key] = value
    sides = [await daemon(name, src, tmp / name, own[name]) for name, src in checkouts.items()]
    samples: dict[tuple[str, ...], list[float]] = {}
    try:
        for phase in ("idle", "hog"):
            with hogs_running(2 if phase == "hog" else 0):
                await asyncio.sleep(0.5)
                for i in range(rounds + 5):
                    for side in sides if i % 2 else sides[::-1]:
                        for what in ("ping", "add"):
                            await asyncio.sleep(gap)
                            text = f"{side.name} {phase} {i}: the build cache lives in .cache/{i}"
                            ms = await side.timed(*call_of(what, text))
                            if i >= 5:  # the first rounds warm up
                                samples.setdefault((phase, what, side.name), []).append(ms)
    finally:
        for name in checkouts:
            stop_daemon(tmp / name)
        shutil.rmtree(tmp, ignore_errors=True)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, required=True, help="the other checkout")
    ap.add_argument("--rounds", type=int, default=120)
    ap.add_argument("--gap", type=float, default=0.03, help="seconds between calls")
    ap.add_argument(
        "--env", action="append", default=[], help="SIDE:KEY=VALUE (SIDE: this, baseline)"
    )
    args = ap.parse_args()
    samples = asyncio.run(run(args.rounds, args.gap, args.baseline_src.resolve(), args.env))
    print(
        f"load {os.getloadavg()[0]:.1f}; {args.rounds} rounds, gap {args.gap * 1000:.0f} ms "
        f"(ms, p50 / p95, this / baseline) {' '.join(args.env)}"
    )
    print_ab(samples, ("ping", "add"))


if __name__ == "__main__":
    main()
