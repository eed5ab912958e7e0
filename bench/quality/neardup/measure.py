"""Cosine of near-duplicate vs merely related note pairs under the shipped embedder.

``pairs.jsonl``: hand-written pairs in English, Japanese and Thai. ``dup``: the same
lesson or fact in other words (what folding should merge); ``related``: another valid
fact on the same topic (what must stay apart). Prints each class's distribution per
language and overall, and the gap between the lowest ``dup`` and the highest
``related`` cosine: the folding threshold (``neardup.FOLD_SIMILARITY``) sits inside it.

    .venv/bin/python bench/quality/neardup/measure.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path

import numpy as np

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders import build_embedder
from mcp_gateway.search.neardup import FOLD_SIMILARITY

PAIRS = Path(__file__).with_name("pairs.jsonl")


def load() -> list[dict[str, str]]:
    return [json.loads(line) for line in PAIRS.read_text("utf-8").splitlines() if line]


async def cosines(pairs: list[dict[str, str]]) -> list[float]:
    embedder = build_embedder(KiokuSettings().embedder)
    await embedder.start()
    try:
        texts = [t for p in pairs for t in (p["a"], p["b"])]
        vecs = np.asarray(await embedder.embed_documents(texts), dtype=np.float64)
    finally:
        await embedder.aclose()
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [float(vecs[2 * i] @ vecs[2 * i + 1]) for i in range(len(pairs))]


def main() -> None:
    pairs = load()
    sims = asyncio.run(cosines(pairs))
    groups: dict[tuple[str, str], list[float]] = {}
    for p, s in zip(pairs, sims, strict=True):
        groups.setdefault((p["lang"], p["label"]), []).append(s)
        groups.setdefault(("all", p["label"]), []).append(s)
    print(f"{'lang':<5}{'label':<9}{'n':>3} {'min':>6} {'median':>6} {'max':>6}")
    for (lang, label), vals in sorted(groups.items()):
        print(
            f"{lang:<5}{label:<9}{len(vals):>3} {min(vals):6.3f} "
            f"{statistics.median(vals):6.3f} {max(vals):6.3f}"
        )
    low_dup, high_rel = min(groups[("all", "dup")]), max(groups[("all", "related")])
    print(f"gap: related max {high_rel:.3f} .. dup min {low_dup:.3f}")
    print("threshold  dup folded  related folded")
    for t in (0.92, 0.93, 0.94, 0.945, 0.95, 0.955, 0.96):
        dup = sum(s >= t for s in groups[("all", "dup")])
        rel = sum(s >= t for s in groups[("all", "related")])
        print(f"{t:9.3f} {dup:>6}/{len(groups[('all', 'dup')])} {rel:>9}/36")
    print(f"FOLD_SIMILARITY {FOLD_SIMILARITY}")
    for p, s in zip(pairs, sims, strict=True):
        wrong = (p["label"] == "dup") != (s >= FOLD_SIMILARITY)
        if wrong:
            print(f"  on the wrong side: {p['lang']} {p['label']} {s:.3f}: {p['a'][:40]}")


if __name__ == "__main__":
    main()
