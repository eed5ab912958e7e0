"""Offline: does a further signal help the "nothing matches" judgement? (issue 45 item 3)

Reads the rows ``nomatch.py --rows FILE`` wrote (every question's signals, with each
channel's best 50 cosines and best 10 memories) and, per candidate signal, sweeps its
weight beside the shipped ones (channel weights, unknown terms) the way ``nomatch.choose``
does: on dev, the bar flagging the most out-of-scope questions with at most ``--budget``
of either set's answerable ones flagged. Prints dev figures only unless ``--test``.

Candidates (each: higher = more evidence of a match):

- ``minilm_margin`` / ``static_margin`` / ``e5_margin``: a channel's best cosine minus its
  5th best (a query that names something the store holds stands out from the rest);
- ``agree``: the share of the further channels whose best 3 hold e5's best memory;
- ``minilm_z``: MiniLM's best cosine as a z-score over its best 50.

    python bench/quality/nomatch_extra.py --rows FILE [--test]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from nomatch import SETS  # noqa: E402

from mcp_gateway.search import match  # noqa: E402

Feature = Callable[[dict[str, Any]], float | None]


def _margin(scores: list[float] | None, k: int = 5) -> float | None:
    if not scores or len(scores) < k:
        return None
    return scores[0] - scores[k - 1]


def _z(scores: list[float] | None) -> float | None:
    if not scores or len(scores) < 5:
        return None
    sd = float(np.std(scores))
    return None if sd == 0 else (scores[0] - float(np.mean(scores))) / sd / 10


def _agree(r: dict[str, Any]) -> float | None:
    top = (r.get("dense_ids") or [None])[0]
    chans = r.get("channels_ids") or {}
    if top is None or not chans:
        return None
    return sum(top in ids[:3] for ids in chans.values()) / len(chans)


FEATURES: dict[str, Feature] = {
    "minilm_margin": lambda r: _margin((r.get("channels_all") or {}).get("minilm")),
    "static_margin": lambda r: _margin((r.get("channels_all") or {}).get("static_use")),
    "e5_margin": lambda r: _margin(r.get("dense_all")),
    "e5_margin3": lambda r: _margin(r.get("dense_all"), 3),
    "e5_margin10": lambda r: _margin(r.get("dense_all"), 10),
    "e5_margin20": lambda r: _margin(r.get("dense_all"), 20),
    "e5_over_mean10": lambda r: (
        None
        if len(r.get("dense_all") or []) < 10
        else r["dense_all"][0] - float(np.mean(r["dense_all"][:10]))
    ),
    "agree": _agree,
    "minilm_z": lambda r: _z((r.get("channels_all") or {}).get("minilm")),
}
WEIGHTS = [round(0.02 * i, 2) for i in range(16)]
EXTRA = [round(0.1 * i, 2) for i in range(21)]  # the candidate's weight: 0 to 2


def sweep(
    rows: list[dict[str, Any]], feature: Feature | None, budget: float, names: list[str]
) -> tuple[float, match.Bars, float]:
    """On dev: (share of out-of-scope flagged, bars, the candidate's weight)."""
    dev = [r for r in rows if r["split"] == "dev"]
    free = np.asarray([r["exact"] or not r["answered"] or r["dense"] is None for r in dev])
    groups = [np.asarray([r["set"] == s and not r["oos"] for r in dev]) for s in SETS]
    oos = np.asarray([r["oos"] for r in dev])
    centre = 0.0
    if feature is not None:
        # a signal counts as its distance from the answerable questions' median, so
        # that its absence (None: 0) is neutral
        vals = [v for r in dev if not r["oos"] and (v := feature(r)) is not None]
        centre = float(np.median(vals)) if vals else 0.0
    extra_vals = np.asarray(
        [0.0 if feature is None or (v := feature(r)) is None else v - centre for r in dev]
    )
    dense = np.asarray([r["dense"] or 0.0 for r in dev])
    chans = [
        np.asarray([r["channels"][n] - match.CENTRE if n in r["channels"] else 0.0 for r in dev])
        for n in names
    ]
    unknown = np.asarray([r.get("unknown") or 0.0 for r in dev])
    best: tuple[tuple[float, float, float], match.Bars, float] | None = None
    for *combo, u, x in itertools.product(
        *[WEIGHTS] * len(names), WEIGHTS, EXTRA if feature is not None else [0.0]
    ):
        probe = match.Bars(bar=0.0, weights=dict(zip(names, combo, strict=True)), unknown=u)
        # match.Bars.strength, vectorised
        strength = dense + sum(w * c for w, c in zip(combo, chans, strict=True))
        strength = strength - u * unknown + x * extra_vals
        # the highest bar flagging at most ``budget`` of each set's answerable ones:
        # flagged = strength below the bar, so the bar may rise to the (k+1)-th lowest
        top = math.inf
        for g in groups:
            mine = np.sort(strength[g & ~free])
            k = math.floor(budget * int(g.sum()) + 1e-9)
            if k < len(mine):
                top = min(top, float(mine[k]))
        caught = float(((strength < top) & oos & ~free).sum() / oos.sum())
        key = (caught, -sum(combo) - u - x, -top)
        if best is None or key > best[0]:
            bar = math.floor(top * 1e4) / 1e4
            best = (key, match.Bars(bar=bar, weights=probe.weights, unknown=u), x)
    assert best is not None
    return best[0][0], best[1], best[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument("--budget", type=float, default=0.02)
    ap.add_argument("--only", nargs="*", help="these candidates only")
    args = ap.parse_args()
    rows = json.loads(args.rows.read_text())
    names = sorted({n for r in rows for n in r["channels"]})
    dev = [r for r in rows if r["split"] == "dev"]
    n_oos = sum(r["oos"] for r in dev)
    only = args.only or list(FEATURES)
    for name, feature in [("none", None), *((n, FEATURES[n]) for n in only)]:
        caught, bars, x = sweep(rows, feature, args.budget, names)
        print(f"{name:14s} dev out-of-scope flagged {caught * n_oos:.0f}/{n_oos}  {bars} x={x}")


if __name__ == "__main__":
    main()
