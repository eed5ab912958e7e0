"""[RECENT] relatedness: which rule tells a lesson about the query from one that is not.

Over ``recent/topics.jsonl``'s labelled set (the 24-note store of
``tests/test_priority_relevance.py`` plus one lesson per topic, en/ja/th; each topic's
questions in en/ja/th), through the real MCP door in-process on the shipped settings:
every question is asked once and, for every lesson of the store, the evidence a rule
could use is recorded from the search's own candidates (``ranking.recent_floor``'s
input) and channel hits (``match.signals``' input):

- ``ratio``: its fused score before the boost over the best kept hit's (today's rule:
  ``close_to_best``, >= ``priority_near`` 0.9);
- ``cos``: its own e5 cosine, ``gap``: the best hit's e5 cosine minus it;
- ``strength``: the match judgement (``match.Bars``) applied to the lesson alone, its own
  e5 cosine plus the channels' weighted cosines (what "strong" asks of a search's best).

Then per rule, on dev: the threshold that lists the most related lessons while listing
at most ``--budget`` of the unrelated ones that reach the keep rule; its test figures.

    python bench/quality/recent_rel.py [--rows FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import intervals  # noqa: E402

import mcp_gateway.search.service as service_mod  # noqa: E402
from mcp_gateway.common.sections import IndexSettings  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.protocol.server import create_server  # noqa: E402
from mcp_gateway.search import match, ranking, related  # noqa: E402
from tests.conftest import Harness, connected  # noqa: E402
from tests.test_priority_relevance import HIGH, NOTES  # noqa: E402

LANGS = ("en", "ja", "th")
TOPICS = [json.loads(line) for line in (HERE / "recent" / "topics.jsonl").open(encoding="utf-8")]


async def collect() -> list[dict[str, Any]]:
    """One row per (question, lesson of the store)."""
    taps: dict[str, Any] = {}
    floor, signals = service_mod.recent_floor, service_mod.signals

    def tapped_floor(candidates: Any, params: Any, wanted: Any = None) -> Any:
        taps["candidates"], taps["params"] = list(candidates), params
        return floor(candidates, params, wanted)

    def tapped_signals(dense: Any, channels: Any, reads: Any, exact: bool) -> match.Signals:
        taps["channels"], taps["reads"] = channels, reads
        return signals(dense, channels, reads, exact)

    rows: list[dict[str, Any]] = []
    service_mod.recent_floor, service_mod.signals = tapped_floor, tapped_signals
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = KiokuSettings(
                data_dir=Path(tmp) / "data",
                redis_url=None,
                qdrant_url=None,
                index=IndexSettings(collection=f"r_{uuid.uuid4().hex[:12]}"),
            )
            apps: list[Any] = []
            async with connected(create_server(settings, on_app=apps.append)) as client:
                h = Harness(client, apps)
                lessons: dict[str, str] = {}  # id -> topic ("high0".. for the four)
                for i, text in enumerate(HIGH):
                    added = await h.ok("add_note", text=text, type="lesson", priority="high")
                    lessons[added["id"]] = f"high{i}"
                for text in NOTES.values():
                    await h.ok("add_note", text=text)
                for t in TOPICS:
                    if t["note"] not in NOTES:  # a note of its own beside the lesson
                        await h.ok("add_note", text=t["note"])
                    added = await h.ok("add_note", text=t["lesson"], type=t["type"])
                    lessons[added["id"]] = t["topic"]
                await h.settle()
                bars = apps[0].search.match_bars if hasattr(apps[0], "search") else None
                for t in TOPICS:
                    for lang in LANGS:
                        taps.clear()
                        q = t["questions"][lang]
                        data = await h.ok("search_memory", query=q, top=1)
                        rows += _rows(taps, lessons, bars, t, lang, q, data)
    finally:
        service_mod.recent_floor, service_mod.signals = floor, signals
    return rows


def _rows(
    taps: dict[str, Any],
    lessons: dict[str, str],
    bars: match.Bars | None,
    t: dict[str, Any],
    lang: str,
    q: str,
    data: dict[str, Any],
) -> list[dict[str, Any]]:
    cands: list[ranking.Candidate] = taps.get("candidates", [])
    params = taps.get("params")
    best_sparse = max((c.sparse_score or 0.0 for c in cands), default=0.0)
    best_distance = min((c.distance for c in cands if c.distance is not None), default=2.0)
    passed = [
        c
        for c in cands
        if c.exact or ranking.passes_threshold(c, params, best_sparse, best_distance)
    ]
    best = max((c.base_score for c in passed), default=0.0)
    by_source = {str(c.payload.get("source_id")): c for c in cands}
    kept = {str(c.payload.get("source_id")) for c in passed}
    chan: dict[str, dict[str, float]] = {}
    for name, hits in taps.get("channels", {}).items():
        can = taps.get("reads", {}).get(name)
        chan[name] = {}
        for hit in hits:
            if can is None or hit.payload.get("script", "latin") in can:
                chan[name].setdefault(str(hit.payload.get("source_id")), hit.score)
    best_cos = 1.0 - best_distance
    coses = sorted((1.0 - c.distance for c in cands if c.distance is not None), reverse=True)[:20]
    mean = sum(coses) / max(1, len(coses))
    std = (sum((x - mean) ** 2 for x in coses) / max(1, len(coses))) ** 0.5
    order = [str(c.payload.get("source_id")) for c in sorted(passed, key=lambda c: -c.base_score)]
    best_chan = {n: max(s.values(), default=None) for n, s in chan.items()}
    out = []
    for lid, ltopic in lessons.items():
        c = by_source.get(lid)
        cos = None if c is None or c.distance is None else 1.0 - c.distance
        own = {n: s[lid] for n, s in chan.items() if lid in s}
        sig = match.Signals(dense=cos, channels=own)
        top_sig = match.Signals(
            dense=best_cos, channels={n: v for n, v in best_chan.items() if v is not None}
        )
        out.append(
            {
                "q": q,
                "topic": t["topic"],
                "lang": lang,
                "split": t["split"],
                "lesson": ltopic,
                "related": ltopic == t["topic"],
                "present": c is not None,
                "kept": lid in kept,
                "ratio": (c.base_score / best) if c is not None and best > 0 else 0.0,
                "cos": cos,
                "gap": None if cos is None else best_cos - cos,
                "chan": own,
                "low": _low(c, taps),
                "chan_best": {n: v for n, v in best_chan.items() if v is not None},
                "z": None if cos is None or std == 0 else (cos - mean) / std,
                "rank": order.index(lid) if lid in order else None,
                "strength": None if cos is None or bars is None else bars.strength(sig),
                "strength_gap": None
                if cos is None or bars is None
                else bars.strength(top_sig) - bars.strength(sig),
                "answered": lid in {r["id"] for r in data["results"]},
                "recent": lid in {r["id"] for r in data["recent"]},
            }
        )
    return out


def _low(c: ranking.Candidate | None, taps: dict[str, Any]) -> float | None:
    """``related.mark``'s verdict for this candidate (the lowest cosine of a channel
    that reads it and answered; 0.0 where it left it out; None: none judged it)."""
    if c is None:
        return None
    probe = ranking.Candidate(c.point_id, c.payload)
    related.mark([probe], taps.get("channels", {}), taps.get("reads", {}))
    return probe.channel_low


# each rule: a feature where higher means closer, the lesson listed at >= threshold
RULES = {
    "ratio (fused score / best)": lambda r: r["ratio"],
    "own e5 cosine": lambda r: r["cos"],
    "e5 cosine gap to the best (negated)": lambda r: None if r["gap"] is None else -r["gap"],
    "match strength of the lesson alone": lambda r: r["strength"],
    "strength gap to the search's best (negated)": lambda r: (
        None if r["strength_gap"] is None else -r["strength_gap"]
    ),
}


def listed(r: dict[str, Any], feature: Any, bar: float) -> bool:
    v = feature(r)
    return bool(r["kept"] and v is not None and v >= bar)


def shipped(r: dict[str, Any], near: float = 0.9, floor: float = 0.35) -> bool:
    """``close_to_best`` as shipped: the ratio and the channels' agreement."""
    low = r["low"]
    return bool(r["kept"] and r["ratio"] >= near and (low is None or low >= floor))


def choose(rows: list[dict[str, Any]], feature: Any, budget: float) -> float:
    """On dev: the bar listing the most related lessons with at most ``budget`` of the
    unrelated ones listed (ties: the higher bar)."""
    dev = [r for r in rows if r["split"] == "dev"]
    unrelated = [r for r in dev if not r["related"]]
    best: tuple[int, float] | None = None
    for bar in sorted({v for r in dev if (v := feature(r)) is not None}):
        fp = sum(listed(r, feature, bar) for r in unrelated) / max(1, len(unrelated))
        if fp > budget:
            continue
        tp = sum(listed(r, feature, bar) for r in dev if r["related"])
        if best is None or tp >= best[0]:
            best = (tp, bar)
    return best[1] if best else float("inf")


def rate(values: list[float], label: str) -> str:
    if not values:
        return "n/a"
    mean, lo, hi = intervals.bootstrap(values, label=label)
    return f"{sum(values):3.0f}/{len(values):4d} = {mean:.3f} [{lo:.3f}, {hi:.3f}]"


def report(rows: list[dict[str, Any]], name: str, feature: Any, bar: float, splits: tuple) -> None:
    print(f"\n{name} >= {bar:.4f}")
    for split in splits:
        mine = [r for r in rows if r["split"] == split]
        for lang in ("all", *LANGS):
            part = [r for r in mine if lang in ("all", r["lang"])]
            rel = [float(listed(r, feature, bar)) for r in part if r["related"]]
            unr = [float(listed(r, feature, bar)) for r in part if not r["related"]]
            print(
                f"  {split:4s} {lang:3s} related listed {rate(rel, split + lang + 'r')}"
                f" | unrelated listed {rate(unr, split + lang + 'u')}"
            )


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=Path, help="write (or, if it exists, read) the rows")
    ap.add_argument("--budget", type=float, default=0.01, help="unrelated listed, dev")
    ap.add_argument("--dev-only", action="store_true")
    args = ap.parse_args()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = await collect()
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    splits = ("dev",) if args.dev_only else ("dev", "test")
    print(f"{len(rows)} (question, lesson) pairs, {sum(r['related'] for r in rows)} related")
    # a lesson the answer already shows is no [RECENT] candidate
    rows = [r for r in rows if not r["answered"]]
    print(f"{len(rows)} with the lesson outside the answer (top=1)")
    report(rows, "main: ratio", RULES["ratio (fused score / best)"], 0.9, splits)
    for floor in (0.25, 0.3, 0.35, 0.4):
        report(
            rows,
            f"ratio >= 0.9, channels >= {floor}",
            lambda r, f=floor: shipped(r, 0.9, f) or None,
            1,
            splits,
        )
    for name, feature in RULES.items():
        report(rows, name + " (dev choice)", feature, choose(rows, feature, args.budget), splits)


if __name__ == "__main__":
    asyncio.run(main())
