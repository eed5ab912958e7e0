"""Where a document batch's time goes in the e5 onnx engine (one process, no server).

Real-looking notes (both quality sets' memories, in a fixed shuffled order), embedded
by the engine directly: tokenising alone, the forward pass (exact graph and the int8
draft graph) with and without latent terms, on 1 and 2 threads, and the exact graph
with several windows a pass against one at a time. Prints notes/s and tokens/s of each.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/embed_profile.py [--notes 256]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import functools
import json
import os
import random
import time
from collections.abc import Callable

from mcp_gateway.embedders import e5_onnx
from mcp_gateway.embedders.e5_onnx import OnnxE5
from mcp_gateway.embedders.local import _onnx_engine


def texts(n: int) -> list[str]:
    out: list[str] = []
    for name in ("data", "conv"):
        with open(_HERE / "quality" / name / "memories.jsonl", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f if line.strip()]
    random.Random(7).shuffle(out)
    return out[:n]


def run_all(engine: OnnxE5, docs: list[str], threads: int, terms: bool, draft: bool) -> None:
    for i in range(0, len(docs), 32):
        engine.encode(docs[i : i + 32], "passage: ", threads, terms=terms, draft=draft)


def timed(label: str, fn: Callable[[], object], notes: int, tokens: int) -> float:
    began = time.perf_counter()
    fn()
    s = time.perf_counter() - began
    print(f"{label:48s} {notes / s:7.1f} notes/s  {tokens / s:8.0f} tokens/s  ({s:.2f} s)")
    return s


def main(args: argparse.Namespace) -> None:
    print(f"load {os.getloadavg()[0]:.1f}")
    docs = texts(args.notes)
    engine = _onnx_engine("original", True, True, True, False)
    counts = [engine.token_count(t) for t in docs]
    tokens = sum(counts)
    print(
        f"{len(docs)} notes, tokens mean {tokens / len(docs):.0f}, "
        f"max {max(counts)}, sorted p50 {sorted(counts)[len(counts) // 2]}"
    )
    for threads in args.threads:
        engine.warm(threads)
        engine.encode(docs[:8], "passage: ", threads, terms=True)  # first runs
        engine.encode(docs[:8], "passage: ", threads, terms=True, draft=True)
    tok = engine._tokenizer
    timed("tokenise only", lambda: [tok.encode("passage: " + t) for t in docs], len(docs), tokens)
    for threads in args.threads:
        for draft in (False, True):
            graph = "int8 draft" if draft else "exact"
            for terms in (False, True):
                label = f"{graph}, {threads} thr, terms {'on' if terms else 'off'}"
                timed(
                    label,
                    functools.partial(run_all, engine, docs, threads, terms, draft),
                    len(docs),
                    tokens,
                )
        for most in (1, 4, 16):
            old = e5_onnx._MAX_BATCH
            e5_onnx._MAX_BATCH = most
            try:
                timed(
                    f"exact, {threads} thr, terms off, {most} windows a pass",
                    functools.partial(run_all, engine, docs, threads, False, False),
                    len(docs),
                    tokens,
                )
            finally:
                e5_onnx._MAX_BATCH = old


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=256)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    main(ap.parse_args())
