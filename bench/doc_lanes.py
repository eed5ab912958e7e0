"""Document lanes: notes/s of the local embedder's document path with 1 and 2 lanes.

``--notes`` real memories (``bench/ingest.py``'s ``real_texts``), embedded through
``LocalEmbedder.encode_documents`` (what the batcher calls): the exact pass with its
latent terms and the draft pass, each with ``embedder.document_lanes`` 1 and 2 (one
thread a lane, no nice: this measures what the cores give, not the sharing), the
configurations interleaved over ``--rounds``. Prints the median notes/s of each and per
core. Read it beside the load printed: on a shared machine a lane gets what is left.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/doc_lanes.py [--notes 128]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import os
import statistics
import time

import anyio
from ingest import real_texts

from mcp_gateway.embedders.local import LocalEmbedder


async def main(args: argparse.Namespace) -> None:
    texts = real_texts(args.notes)
    print(f"load {os.getloadavg()[0]:.1f}; {len(texts)} real notes", flush=True)
    embedders = {lanes: LocalEmbedder(engine="onnx", document_lanes=lanes) for lanes in (1, 2)}
    for emb in embedders.values():
        await emb.start()
    rates: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for draft in (False, True):
            for lanes, emb in embedders.items():
                began = time.perf_counter()
                await emb.encode_documents(texts, draft=draft)
                rate = len(texts) / (time.perf_counter() - began)
                rates.setdefault(("draft" if draft else "exact + terms", lanes), []).append(rate)
    for (kind, lanes), values in rates.items():
        rate = statistics.median(values)
        print(
            f"{kind:14s} {lanes} lane(s): {rate:6.1f} notes/s, {rate / lanes:6.1f} per core "
            f"(median of {len(values)})"
        )
    print(f"load {os.getloadavg()[0]:.1f}")
    for emb in embedders.values():
        await emb.aclose()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    anyio.run(main, ap.parse_args())
