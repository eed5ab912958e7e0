"""e5's tokenizer on words it has not seen: this tree's against another's, in one process.

Over every memory of the quality sets (generated, conversational, held-out), passes
alternate between the two tokenizers, each pass a fresh tokenizer (its run cache
empty):
- ``burst``: the texts in order, the cache kept across them (a burst's notes share
  words: a note pays for its new words only), per-text time;
- ``cold``: the cache emptied before each text (every word new);
- ``warm``: the text again right after (every word cached).
And each tokenizer's build time and the memory it holds (tracemalloc, after the build).
Prints the medians over passes of the mean per text, and the ratios. Checks the ids
agree on every text. Usage:

    python bench/tokenizer_cold.py --base <other tree>/mcp_gateway/embedders/e5_tokenizer.py
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import time
import tracemalloc
from pathlib import Path

from mcp_gateway.embedders.e5_onnx import model_path
from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer
from mcp_gateway.graphs import e5_file

QUALITY = Path(__file__).resolve().parent / "quality"


def memories() -> list[str]:
    out = []
    for name in ("data", "conv", "heldout"):
        with (QUALITY / name / "memories.jsonl").open() as f:
            out += [json.loads(line)["text"] for line in f]
    return out


def load_base(path: Path) -> type:
    spec = importlib.util.spec_from_file_location("base_e5_tokenizer", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.UnigramTokenizer  # type: ignore[no-any-return]


def build(cls: type, vocab: e5_file.Vocabulary) -> tuple[object, float, float, float]:
    """A tokenizer, its build's seconds (median of 3), and the MiB it holds and its
    build's peak (tracemalloc: numpy's arrays are counted; the vocabulary is not)."""
    took = []
    for _ in range(3):
        gc.collect()
        t = time.perf_counter()
        cls(vocab)
        took.append(time.perf_counter() - t)
    gc.collect()
    tracemalloc.start()
    tok = cls(vocab)
    gc.collect()
    held, peak = (b / 2**20 for b in tracemalloc.get_traced_memory())
    tracemalloc.stop()
    return tok, statistics.median(took), held, peak


def one_pass(cls: type, vocab: e5_file.Vocabulary, texts: list[str]) -> dict[str, float]:
    tok = cls(vocab)
    t = time.perf_counter()
    for text in texts:
        tok.encode(text)
    burst = (time.perf_counter() - t) / len(texts)
    cold = warm = 0.0
    for text in texts:
        tok._cache.clear()
        t0 = time.perf_counter()
        tok.encode(text)
        t1 = time.perf_counter()
        tok.encode(text)
        t2 = time.perf_counter()
        cold, warm = cold + t1 - t0, warm + t2 - t1
    return {"burst": burst, "cold": cold / len(texts), "warm": warm / len(texts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other tree's e5_tokenizer.py")
    ap.add_argument("--passes", type=int, default=5)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    vocab = e5_file.load(model_path("original")).vocab
    texts = memories()
    sides = {"base": load_base(args.base), "new": UnigramTokenizer}
    toks = {}
    for name, cls in sides.items():
        tok, took, held, peak = build(cls, vocab)
        toks[name] = tok
        print(f"{name}: build {took * 1e3:.0f} ms, holds {held:.1f} MiB (peak {peak:.1f})")
    bad = sum(toks["base"].encode(t) != toks["new"].encode(t) for t in texts)  # type: ignore[attr-defined]
    print(f"{len(texts)} texts, ids differ on {bad}")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for _ in range(args.passes):
        for name, cls in sides.items():
            runs[name].append(one_pass(cls, vocab, texts))
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    for k in ("burst", "cold", "warm"):
        b, n = med["base"][k] * 1e6, med["new"][k] * 1e6
        print(f"{k:5s}: base {b:7.1f} us/text  new {n:7.1f} us/text  base/new {b / n:.2f}x")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
