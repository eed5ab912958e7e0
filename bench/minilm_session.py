"""MiniLM's session alone in a process: what it holds and how fast it answers.

One ``MiniLM`` session (``float``: the shipped graph; ``int8``: ``embedder.minilm_int8``'s
int8 kernels), one thread, ``heap.return_large_buffers`` on as in the owner. Prints
RssAnon and RssFile after opening minus before (MB), the same after 400 generated
memories in calls of 4 (the channel's ``STEP``), and the p50 of 200 generated queries
embedded one at a time (ms). Run the two kinds in turn, twice:

    for r in 1 2; do for v in float int8; do
      flock "${TMPDIR:-/tmp}/kioku-bench.lock" nice -n 5 python bench/minilm_session.py $v
    done; done
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from mcp_gateway.common import heap

DATA = Path(__file__).resolve().parent / "quality" / "data"


def rss() -> tuple[float, float]:
    """(RssAnon, RssFile) of this process, MB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile"):
            found[key] = int(value.split()[0]) / 1024
    return found["RssAnon"], found["RssFile"]


def main(kind: str) -> None:
    heap.return_large_buffers()
    lines = (DATA / "memories.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    lines = (DATA / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(line)["query"] for line in lines][:200]
    import onnxruntime  # noqa: F401  (the library's import is not the session's memory)

    from mcp_gateway.embedders.minilm import MiniLM

    anon0, file0 = rss()
    model = MiniLM(1, int8=kind == "int8")
    model.encode(["warm"])
    anon1, file1 = rss()
    for start in range(0, 400, 4):
        model.encode(texts[start : start + 4])
    anon2, file2 = rss()
    took = []
    for q in queries:
        began = time.perf_counter()
        model.encode([q])
        took.append(1000 * (time.perf_counter() - began))
    print(
        f"{kind}: anon at open +{anon1 - anon0:.0f} (file +{file1 - file0:.0f}), after 400 "
        f"docs +{anon2 - anon0:.0f} (file +{file2 - file0:.0f}); query p50 "
        f"{np.median(took):.2f} ms"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("float", "int8"):
        raise SystemExit("usage: python bench/minilm_session.py float|int8")
    main(sys.argv[1])
