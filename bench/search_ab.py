"""Searches over stdio, two checkouts side by side, each on its own loaded memory.

Two ``kioku serve`` processes (this checkout and ``--baseline-src``), each with its own
daemon on its own data dir loaded with the same N memories (``peers.py``'s texts and
loader) by that side's own code (the two may store the index differently: round 15's
turbo16 vectors cannot be opened by older code), called alternately (the order flips
every round) with a pause between calls (``--gap``, 30 ms: as between an assistant's
calls; 0: back to back). Each round and side: a new query (``top`` 5), the same
request again (the answer cache), the same query with ``top`` 4 (a new answer over the
cached query embedding: the whole search path but the model), and a trivial call
(``get_note`` of a missing id). Raw JSON-RPC lines on the proxy's stdio, no MCP client
library. Idle, then with two busy processes beside them. p50 / p95 in ms; what differs
is the code.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/search_ab.py \\
        --baseline-src DIR [--size 2000] [--rounds 100] [--gap 0.03]
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
import subprocess
import tempfile
from importlib.util import module_from_spec, spec_from_file_location
from typing import Any

ROOT = _HERE.parent
sys.path.append(str(_HERE))  # appended: a bench module must not shadow a library's

from harness import SERVE, serve_env, stop_daemon
from proxy_hop import Side, hogs_running, print_ab, stdio_side

KINDS = ("new", "repeat", "cached_emb", "trivial")
LOAD = (
    "import asyncio, sys; from pathlib import Path; import peers; "
    "asyncio.run(peers._load_kioku(Path(sys.argv[1]), peers.memories(int(sys.argv[2]), 1), 500))"
)


def load(data: Path, size: int, src: Path) -> None:
    """N memories into ``data`` with ``src``'s code (this checkout's loader)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env.update(PYTHONPATH=f"{src}{os.pathsep}{_HERE}", KIOKU_LOG_LEVEL="WARNING")
    # in ``src``: ``python -c`` puts the working directory first on sys.path
    subprocess.run([sys.executable, "-c", LOAD, str(data), str(size)], env=env, check=True, cwd=src)


def queries(count: int) -> list[str]:
    """The peers bench's questions (1,680 distinct), loaded from its file: ``bench/``
    is not on ``sys.path`` (its ``queue.py`` would shadow the stdlib's)."""
    spec = spec_from_file_location("peers", _HERE / "peers.py")
    assert spec is not None and spec.loader is not None
    peers = sys.modules["peers"] = module_from_spec(spec)  # its dataclasses look it up
    spec.loader.exec_module(peers)
    found: list[str] = peers.queries(3)
    return found[:count]


def calls(kind: str, query: str, i: int) -> tuple[str, dict[str, Any]]:
    if kind == "trivial":
        return "tools/call", {"name": "get_note", "arguments": {"id": f"01MISSING{i:017d}"}}
    top = 4 if kind == "cached_emb" else 5
    return "tools/call", {"name": "search_memory", "arguments": {"query": query, "top": top}}


async def start(name: str, src: Path, data: Path) -> Side:
    return await stdio_side(name, SERVE, serve_env(data, src), src)


async def run(args: argparse.Namespace) -> dict[tuple[str, ...], list[float]]:
    tmp = Path(tempfile.mkdtemp(prefix="kioku-search-ab-"))
    checkouts = {"this": ROOT, "baseline": args.baseline_src.resolve()}
    for name, src in checkouts.items():
        load(tmp / name, args.size, src)
    sides = [await start(name, src, tmp / name) for name, src in checkouts.items()]
    qs = queries(2 * (args.rounds + 5))
    samples: dict[tuple[str, ...], list[float]] = {}
    try:
        for phase_no, phase in enumerate(("idle", "hog")):
            with hogs_running(2 if phase == "hog" else 0):
                await asyncio.sleep(0.5)
                for i in range(args.rounds + 5):
                    query = qs[phase_no * (args.rounds + 5) + i]
                    for side in sides if i % 2 else sides[::-1]:
                        for kind in KINDS:
                            await asyncio.sleep(args.gap)
                            ms = await side.timed(*calls(kind, query, i))
                            if i >= 5:  # the first rounds warm up
                                samples.setdefault((phase, kind, side.name), []).append(ms)
    finally:
        for name in checkouts:
            stop_daemon(tmp / name)
        await asyncio.sleep(0.5)
        shutil.rmtree(tmp, ignore_errors=True)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, required=True, help="the other checkout")
    ap.add_argument("--size", type=int, default=2000, help="memories loaded")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.03, help="seconds between calls")
    args = ap.parse_args()
    samples = asyncio.run(run(args))
    print(
        f"{args.size} memories, {args.rounds} rounds, gap {args.gap * 1000:.0f} ms "
        "(ms, p50 / p95, this / baseline)"
    )
    print_ab(samples, KINDS)


if __name__ == "__main__":
    main()
