"""Write the int8 query graph's calibration (``mcp_gateway/graphs/e5_int8.py``).

Per input channel of every smoothed linear, the largest ``|x|`` the exact graph sees over
calibration texts that are not the quality benchmark's (``bench/quality/data`` is never
read here): the latency benchmarks' generated notes and questions (English), the
embedder benchmark's templates (English, Japanese, Thai) over its topics, and every line
of the docs written in Japanese or Thai. Prints how close the int8 graph's query vectors
come to the exact ones on the same texts and on a few held-apart sentences.

    python bench/e5_smooth_stats.py [--variant original enpt]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# this folder off sys.path: a bench module must not shadow a library module
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse
import importlib.util
from typing import Any

import numpy as np

from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
from mcp_gateway.graphs import e5_int8

ROOT = _HERE.parent
HELD_APART = [
    "has the frontend bundle ever had problems with a stale lock file",
    "デプロイの前にマイグレーションを実行する",
    "ทำไม redis ถึงช้าในการทดสอบ",
    "how do I rotate the API key for the staging cluster",
]


def _bench_module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calibration_texts() -> list[str]:
    peers, embedders = _bench_module("peers"), _bench_module("embedders")
    texts = peers.memories(300, seed=3) + peers.queries(5)[:100]
    for i, topic in enumerate(embedders.TOPICS * 3):
        texts.append(embedders.QUERY_TEMPLATES[i % len(embedders.QUERY_TEMPLATES)].format(topic))
        texts.append(embedders.NOTE_TEMPLATES[i % len(embedders.NOTE_TEMPLATES)].format(t=topic))
    for path in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if 20 < len(line) < 400 and any(ord(ch) >= 0x0E00 for ch in line):
                texts.append(line)
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--variant", nargs="+", default=["original", "enpt"])
    args = ap.parse_args()
    texts = calibration_texts()
    print(f"{len(texts)} calibration texts")
    for variant in args.variant:
        exact = OnnxE5(model_path(variant))
        stats = exact.input_peaks(texts)
        path = e5_int8.stats_path(variant)
        np.savez_compressed(path, **{k: v.astype(np.float16) for k, v in stats.items()})
        fast = OnnxE5(model_path(variant), int8_queries=path)
        assert fast.int8_queries
        for label, group in (("calibration", texts[::7]), ("held apart", HELD_APART)):
            cos = [float(exact.query(t, 1) @ fast.query(t, 1)) for t in group]
            print(f"{variant}: {label} cosine min {min(cos):.5f} mean {np.mean(cos):.5f}")
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
