"""A restarted owner's resident memory and search times on an existing data dir, two
sides side by side: each side is a ``kioku serve`` (source tree, data dir) started on
a copy of its data dir; both answer the same searches, interleaved (who goes first
alternates), so both see the same machine load.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/owner_reopen.py \\
        --side base=BASE_CHECKOUT:DATA_A --side new=.:DATA_B [--searches 300] [--rest S]

A data dir comes from ``bench/owner_memory.py --keep DIR``. Memory is read from
``/proc/<owner pid>/smaps_rollup`` after the first search and after the searches (MB:
Rss, anonymous, mapped files; ``--mappings`` adds the resident MB per kind of mapping).
A search's time is the JSON-RPC round trip of ``search_memory`` as the client sees it.
``--rest``: seconds without calls before the reading after the searches (as in
``owner_memory.py``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE))

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from mcp_stdio import Client, serve_env, status, stop_owner
from owner_memory import DATA, mappings, smaps


class Side:
    def __init__(self, name: str, src: Path, data: Path, root: Path) -> None:
        self.name = name
        self.data = root / name
        shutil.copytree(data, self.data, symlinks=True)
        self.env = serve_env(self.data, src.resolve())
        self.session: Client | None = None
        self.pid = 0
        self.times: list[float] = []

    def start(self) -> None:
        s = self.session = Client(self.env, "owner-reopen-bench", start_timeout=600)
        s.wait(s.tool("search_memory", {"query": "deploy keys rotation"}), 600)
        self.pid = int(status(self.env)["owner"]["pid"])

    def search(self, query: str) -> None:
        assert self.session is not None
        began = time.perf_counter()
        self.session.wait(self.session.tool("search_memory", {"query": query}))
        self.times.append((time.perf_counter() - began) * 1000)

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()
        if self.pid:
            stop_owner(self.pid)


def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="kioku-owner-reopen-"))
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    load = [os.getloadavg()[0]]
    sides: list[Side] = []
    rows: list[tuple[str, str, dict[str, int]]] = []
    try:
        for spec in args.side:
            name, _, rest = spec.partition("=")
            src, _, data = rest.partition(":")
            sides.append(Side(name, Path(src), Path(data), root))
        for side in sides:
            side.start()
        time.sleep(2)
        for side in sides:
            rows.append((side.name, "open (after one search)", smaps(side.pid)))
            if args.mappings:
                print(side.name, "open", mappings(side.pid, side.data), flush=True)
        for i, q in enumerate(queries[: args.searches]):
            for side in sides if i % 2 == 0 else reversed(sides):
                side.search(q)
        time.sleep(args.rest)
        for side in sides:
            rows.append((side.name, f"after {args.searches} searches", smaps(side.pid)))
            if args.mappings:
                print(side.name, "searched", mappings(side.pid, side.data), flush=True)
    finally:
        for side in sides:
            side.stop()
        shutil.rmtree(root, ignore_errors=True)
    load.append(os.getloadavg()[0])
    print(f"\nload {load[0]:.1f} before, {load[1]:.1f} after; MB")
    print("| side | stage | Rss | anonymous | files |\n|---|---|---|---|---|")
    for name, stage, m in rows:
        print(f"| {name} | {stage} | {m['rss']} | {m['anon']} | {m['file']} |")
    print("\n| side | search p50 | p95 | mean (ms) |\n|---|---|---|---|")
    for side in sides:
        t = sorted(side.times)
        p95 = t[int(0.95 * (len(t) - 1))]
        p50, mean = statistics.median(t), statistics.mean(t)
        print(f"| {side.name} | {p50:.1f} | {p95:.1f} | {mean:.1f} |")
    first = statistics.median(sides[0].times)
    for side in sides[1:]:
        ratio = statistics.median(side.times) / first
        print(f"p50 ratio {side.name}/{sides[0].name}: {ratio:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", action="append", required=True, help="NAME=SRC:DATA_DIR")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--mappings", action="store_true")
    parser.add_argument("--rest", type=float, default=0.0, help="seconds idle before a reading")
    main(parser.parse_args())
