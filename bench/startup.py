"""How long an editor waits at launch: ``kioku serve`` over stdio, timed with raw JSON-RPC
lines (no MCP client library), this checkout against another one side by side.

Each round, for each side in turn (the order rotating):
- ``cold``: no daemon yet, so the proxy starts one: the seconds to the ``initialize``
  reply, to the ``tools/list`` reply, and to the first ``search_memory`` answer (which
  needs the stores and the model), and that answer's seconds after ``initialize``'s
  (``search - initialize``: what an editor that searches at once waits after its
  handshake);
- ``warm``: the daemon that run left running: a new ``kioku serve`` to ``initialize``.

Then the daemon is stopped. Each side keeps its data dir across rounds, as an editor
does across launches: round 0 is the first launch into a new data dir (reported apart),
the others are the launches after. The model's graph cache (``$XDG_CACHE_HOME/kioku``)
is shared and warm. p50 / max in seconds and the load average before and after.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/startup.py \
        [--rounds 5] [--baseline-src DIR]

``--baseline-src``: a source tree of the other version (``git archive REV | tar -x -C
DIR``), run with this checkout's virtual environment.
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
import select
import shutil
import statistics
import subprocess
import tempfile
import time

from harness import serve_env, stop_daemon

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "search_memory", "arguments": {"query": "deploy keys rotation"}},
}


def read_reply(proc: subprocess.Popen[bytes], want: int, deadline: float) -> None:
    assert proc.stdout is not None
    buffer = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.05)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise RuntimeError("kioku serve closed its stdout")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            if message.get("id") == want:
                if "error" in message:
                    raise RuntimeError(f"error reply: {message['error']}")
                return
    raise RuntimeError(f"no reply to {want} in time")


def launch(data: Path, src: Path | None, search: bool) -> list[float]:
    """Seconds from the launch to each reply: initialize, tools/list[, search]."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_gateway.cli", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=serve_env(data, src),
        cwd=tempfile.gettempdir(),  # not this checkout: PYTHONPATH decides the source
    )
    assert proc.stdin is not None
    deadline = start + 120
    times = []
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        read_reply(proc, 1, deadline)
        times.append(time.monotonic() - start)
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(TOOLS) + "\n").encode())
        proc.stdin.flush()
        read_reply(proc, 2, deadline)
        times.append(time.monotonic() - start)
        if search:
            proc.stdin.write(json.dumps(SEARCH).encode() + b"\n")
            proc.stdin.flush()
            read_reply(proc, 3, deadline)
            times.append(time.monotonic() - start)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return times


def summary(values: list[float]) -> str:
    return f"p50 {statistics.median(values):5.2f}  max {max(values):5.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, default=None)
    args = parser.parse_args()
    sides: list[tuple[str, Path | None]] = [("this", None)]
    if args.baseline_src is not None:
        sides.append(("baseline", args.baseline_src.resolve()))
    results: dict[str, dict[str, list[float]]] = {
        label: {
            "cold initialize": [],
            "cold tools/list": [],
            "cold first search": [],
            "search - initialize": [],
            "warm": [],
        }
        for name, _ in sides
        for label in (f"{name} (new data dir)", name)
    }
    load_before = os.getloadavg()
    root = Path(tempfile.mkdtemp(prefix="kioku-startup-"))
    try:
        for r in range(args.rounds):
            order = sides[r % len(sides) :] + sides[: r % len(sides)]
            for name, src in order:
                data = root / name
                try:
                    init, tools, search = launch(data, src, search=True)
                    warm = launch(data, src, search=False)[0]
                finally:
                    stop_daemon(data)
                got = results[name if r else f"{name} (new data dir)"]
                got["cold initialize"].append(init)
                got["cold tools/list"].append(tools)
                got["cold first search"].append(search)
                got["search - initialize"].append(search - init)
                got["warm"].append(warm)
                print(
                    f"round {r} {name:8} cold init {init:5.2f} tools {tools:5.2f} "
                    f"search {search:5.2f}  warm init {warm:5.2f}",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()
    print(f"rounds {args.rounds}; load {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    for name, got in results.items():
        for what, values in got.items():
            if not values:
                continue
            line = f"{name:24} {what:19} {summary(values)}"
            mine = results[name.replace("baseline", "this")][what]
            if name.startswith("baseline") and mine:
                ratio = statistics.median(mine) / statistics.median(values)
                line += f"  this/baseline {ratio:4.2f}"
            print(line)


if __name__ == "__main__":
    main()
