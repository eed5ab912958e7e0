"""How the near-duplicate fold threshold is chosen, and what it does on unseen pairs.

``pairs.jsonl``: hand-written pairs in English, Japanese and Thai, as an assistant
writes lessons. ``dup``: the same lesson or fact in other words (what folding should
merge); ``related``: another valid fact on the same topic, often in the same words with
one thing changed (what must stay apart). Each topic has its pairs in one split (even
topics ``dev``, odd ones ``test``), so a translation of a dev pair never sits in test.

A pair folds as ``neardup.Folder`` folds two notes: the same identifiers and numbers
(``neardup.marks``), not one sentence with one thing changed (``one_change.differ``)
and a document cosine at least the threshold; ``--cosine-only`` drops ``differ`` (the
rule shipped before it, for comparison). The rule: on ``dev``,
the threshold on a 0.005 grid with the least cost, a wrong fold (a related pair folded)
counting as two missed ones (it hides a distinct fact behind an id, where a miss only
repeats a line); of equal costs the higher threshold. ``test`` then gives the folding's
precision and recall with Wilson 95 % intervals. ``neardup.FOLD_SIMILARITY`` is what
this prints as chosen. Also printed: what other weights and "no related pair folded on
dev" would choose.

    .venv/bin/python bench/quality/neardup/measure.py [--cosine-only] [--at T]
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders import build_embedder
from mcp_gateway.search.neardup import FOLD_SIMILARITY, marks
from mcp_gateway.search.one_change import differ

PAIRS = Path(__file__).with_name("pairs.jsonl")
GRID = [round(0.90 + 0.005 * i, 3) for i in range(19)]  # 0.900 .. 0.990


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


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    mid = p + z * z / (2 * n)
    return ((mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n))


COSINE_ONLY = "--cosine-only" in sys.argv
# --at T: report test at T instead of the dev choice (--cosine-only --at 0.95: the rule
# shipped before ``one_change``)
AT = float(sys.argv[sys.argv.index("--at") + 1]) if "--at" in sys.argv else None


def folds(pair: dict[str, str], sim: float, threshold: float) -> bool:
    if marks(pair["a"]) != marks(pair["b"]) or sim < threshold:
        return False
    return COSINE_ONLY or not differ(pair["a"], pair["b"])


def counts(rows: list[tuple[dict[str, str], float]], t: float) -> tuple[int, int, int, int]:
    """(dups folded, dups, related folded, related) at threshold ``t``."""
    dup = [folds(p, s, t) for p, s in rows if p["label"] == "dup"]
    rel = [folds(p, s, t) for p, s in rows if p["label"] == "related"]
    return sum(dup), len(dup), sum(rel), len(rel)


WRONG_FOLD_COST = 2


def cost(rows: list[tuple[dict[str, str], float]], t: float, weight: float) -> float:
    dup, n_dup, rel, _ = counts(rows, t)
    return (n_dup - dup) + weight * rel


def choose(dev: list[tuple[dict[str, str], float]], weight: float = WRONG_FOLD_COST) -> float:
    """The threshold of least cost on ``dev``, of equal costs the higher, searched at
    every dev pair's own cosine (a threshold between two of them folds what the upper
    one does; a grid of 0.005 steps missed the best one), given with 3 decimals where
    those still fold the same pairs."""
    return least_cost([s for p, s in dev if foldable(p)], lambda t: cost(dev, t, weight))


def foldable(pair: dict[str, str]) -> bool:
    """Whether any threshold could fold the pair (the checks beside the cosine)."""
    return marks(pair["a"]) == marks(pair["b"]) and (
        COSINE_ONLY or not differ(pair["a"], pair["b"])
    )


def least_cost(cuts: list[float], cost_at: Callable[[float], float]) -> float:
    """Of the thresholds ``cuts`` (the foldable pairs' cosines), the one of least
    ``cost_at``, of equal costs the higher; rounded down to 3 decimals when no other cut
    lies between (tests/test_neardup.py applies the same)."""
    ordered = sorted(set(cuts))
    best = min(reversed(ordered), key=cost_at)
    below = max((c for c in ordered if c < best), default=0.0)
    short = math.floor(best * 1000) / 1000
    return short if short > below else best


def main() -> None:
    pairs = load()
    sims = asyncio.run(cosines(pairs))
    rows = list(zip(pairs, sims, strict=True))
    print(f"{'split':<6}{'lang':<5}{'label':<9}{'n':>3} {'min':>6} {'median':>6} {'max':>6}")
    groups: dict[tuple[str, str, str], list[float]] = {}
    for p, s in rows:
        for lang in (p["lang"], "all"):
            groups.setdefault((p["split"], lang, p["label"]), []).append(s)
    for (split, lang, label), vals in sorted(groups.items()):
        print(
            f"{split:<6}{lang:<5}{label:<9}{len(vals):>3} {min(vals):6.3f} "
            f"{statistics.median(vals):6.3f} {max(vals):6.3f}"
        )
    by_split = {s: [(p, v) for p, v in rows if p["split"] == s] for s in ("dev", "test")}
    print("threshold   dev: dup folded  related folded   test: dup folded  related folded")
    for t in GRID:
        d, t_ = counts(by_split["dev"], t), counts(by_split["test"], t)
        print(
            f"{t:9.3f} {d[0]:>9}/{d[1]} {d[2]:>9}/{d[3]}    {t_[0]:>9}/{t_[1]} {t_[2]:>9}/{t_[3]}"
        )
    for weight in (1, 1.5, 2, 3, 4, 5):
        picked = choose(by_split["dev"], weight)
        print(f"a wrong fold costing {weight} missed ones chooses {picked}")
    none = next((t for t in GRID if counts(by_split["dev"], t)[2] == 0), None)
    print(f"no related pair folded on dev chooses {none}")
    chosen = choose(by_split["dev"])
    if AT is not None:
        print(f"chosen on dev: {chosen}; reported at {AT} (--at)")
        chosen = AT
    k_dup, n_dup, k_rel, n_rel = counts(by_split["test"], chosen)
    folded = k_dup + k_rel
    p_lo, p_hi = wilson(k_dup, folded)
    r_lo, r_hi = wilson(k_dup, n_dup)
    f_lo, f_hi = wilson(k_rel, n_rel)
    if AT is None:
        print(f"chosen on dev: {chosen}  (shipped FOLD_SIMILARITY {FOLD_SIMILARITY})")
    print(
        f"test at {chosen}: precision {k_dup}/{folded} [{p_lo:.3f}, {p_hi:.3f}], "
        f"recall {k_dup}/{n_dup} = {k_dup / n_dup:.3f} [{r_lo:.3f}, {r_hi:.3f}], "
        f"related folded {k_rel}/{n_rel} [{f_lo:.3f}, {f_hi:.3f}]  (Wilson 95 %)"
    )
    # by kind of pair: the first 181 pairs have none ("first set"); the later ones are a
    # minimal edit or a reworded sentence (dup), a name, a plain word or a negation
    # changed in the same sentence (related)
    print("test by kind: folded / pairs (Wilson 95 %)")
    kinds: dict[str, list[bool]] = {}
    for p, s in by_split["test"]:
        kind = f"{p['label']} {p.get('kind', 'first set')}"
        kinds.setdefault(kind, []).append(folds(p, s, chosen))
    for kind, got in sorted(kinds.items()):
        lo, hi = wilson(sum(got), len(got))
        print(f"  {kind:<18} {sum(got):>3}/{len(got):<3} [{lo:.2f}, {hi:.2f}]")
    for p, s in rows:
        if (p["label"] == "dup") != folds(p, s, chosen) or "note" in p:
            why = "marks differ" if marks(p["a"]) != marks(p["b"]) else f"{s:.3f}"
            if why != "marks differ" and not COSINE_ONLY and differ(p["a"], p["b"]):
                why += " one change"
            extra = f"  [{p['note']}]" if "note" in p else ""
            print(f"  {p['split']} {p['lang']} {p['label']:<7} {why}: {p['a'][:50]}{extra}")


if __name__ == "__main__":
    main()
