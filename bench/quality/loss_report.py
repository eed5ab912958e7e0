"""The tables of ``loss.py``: counts per stage, per kind and language, examples, and a
variant's paired differences."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import intervals


def table(name: str, rows: list[dict[str, Any]], top: int) -> None:
    lost_rows = [(r, k, v) for r in rows for k, v in r["lost"].items()]
    n_ev = sum(len(r["relevant"]) for r in rows)
    print(
        f"\n## {name}: {len(rows)} questions, {n_ev} evidence, "
        f"{len(lost_rows)} evidence outside the top {top}, "
        f"{sum(r['short'] for r in rows)} answers shorter than {top}"
    )
    means = {m: sum(r[m] for r in rows) / len(rows) for m in ("nDCG@10", "R@1", "R@10")}
    print("  answers as run.py scores them: " + ", ".join(f"{m} {v:.3f}" for m, v in means.items()))
    _counts("top-10 loss", [(r, v[0]) for r, _k, v in lost_rows])
    _counts("top-10 loss detail", [(r, f"{v[0]}:{v[1]}") for r, _k, v in lost_rows], by=False)
    depth: Counter[str] = Counter()
    for r, k, v in lost_rows:
        if v[0] == "a":
            d = r["deep"][k].get("dense")
            depth[
                "dense "
                + (
                    "none"
                    if d is None
                    else "51-100"
                    if d <= 100
                    else "101-200"
                    if d <= 200
                    else ">200"
                )
            ] += 1
            for ch in r["deep"][k]:
                if ch != "dense" and r["deep"][k][ch] <= 50:
                    depth[f"but {ch} <= 50 (?)"] += 1
    if depth:
        print(
            "  (a) depth of the dense rank: "
            + ", ".join(f"{k} {v}" for k, v in sorted(depth.items()))
        )
    firsts = [(r, r["first"]["stage"]) for r in rows if r["first"]]
    _counts("rank-1 loss", firsts)
    f_rows = [r["first"] for r in rows if r["first"] and r["first"]["stage"] == "f"]
    print(
        "  rank-1, fused below, the share that outvoted it: "
        + ", ".join(
            f"{k} {v}" for k, v in Counter(x.get("outvoted_by", "?") for x in f_rows).most_common()
        )
    )
    asking = sum(
        r["first"]["winner_asks"] for r in rows if r["first"] and r["first"]["stage"] == "f"
    )
    print(f"  rank-1, fused below, the first hit a note ending in a question: {asking}")
    same = [x for x in (r["first"] for r in rows if r["first"]) if x["same_conversation"]]
    if same:
        gaps = Counter(x.get("turn_gap") for x in same)
        print(
            f"  rank-1 winner from the question's own conversation: {len(same)}; "
            "turn gap winner-evidence: "
            + ", ".join(
                f"{k:+d}:{v}"
                for k, v in sorted(gaps.items(), key=lambda kv: abs(kv[0] or 0))[:12]
                if k is not None
            )
        )
    e_rows = [r["first"] for r in rows if r["first"] and r["first"]["stage"] == "e"]
    if e_rows:
        print(
            "  rank-1, moved by a rule: "
            + ", ".join(f"{k} {v}" for k, v in Counter(x["detail"] for x in e_rows).items())
        )


def _counts(label: str, items: list[tuple[dict[str, Any], str]], by: bool = True) -> None:
    total: Counter[str] = Counter(b for _r, b in items)
    print(f"  {label}: " + ", ".join(f"{b} {n}" for b, n in sorted(total.items())))
    if not by:
        return
    for field in ("kind", "lang"):
        groups: dict[str, Counter[str]] = defaultdict(Counter)
        for r, b in items:
            groups[r[field]][b] += 1
        for g, cnt in sorted(groups.items()):
            print(f"    {field}={g:16s} " + " ".join(f"{b}:{cnt[b]}" for b in "acdefg"))


def compare(
    name: str, variant: dict[str, Any], base: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> None:
    """The variant minus the first run, paired, ALL then per kind and language."""
    label = " ".join(f"{k}={v}" for k, v in variant.items())
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups["ALL"].append(i)
        groups[r["kind"]].append(i)
        groups["lang:" + r["lang"]].append(i)
    print(f"\n  {name} {label} minus base (paired 95 %):")
    for g, idx in sorted(groups.items(), key=lambda kv: (kv[0] != "ALL", kv[0])):
        b, c = [base[i] for i in idx], [rows[i] for i in idx]
        cells = []
        for m in ("nDCG@10", "R@1", "R@10"):
            d, lo, hi = intervals.paired(b, c, m)
            cells.append(f"{m} {d:+.3f} [{lo:+.3f},{hi:+.3f}]")
        print(f"    {g:16s} ({len(idx):3d}) " + "  ".join(cells))


def examples(rows: list[dict[str, Any]], folder: Path, per: int) -> None:
    """Up to ``per`` questions of each stage: the question, the evidence it lost (and
    where it was), and for a first place lost, the hit that took it."""
    texts = {m["key"]: m["text"] for m in map(json.loads, (folder / "memories.jsonl").open())}
    asked = {q["qid"]: q["query"] for q in map(json.loads, (folder / "queries.jsonl").open())}
    shown: Counter[str] = Counter()
    print("  examples, top-10 loss:")
    for r in rows:
        for key, (stage, detail, where) in r["lost"].items():
            if shown["top:" + stage] < per:
                shown["top:" + stage] += 1
                print(f"    {stage} {r['qid']} {asked[r['qid']][:70]!r} ({detail}; {where})")
                print(f"      evidence {key}: {texts.get(key, '')[:110]!r}")
    print("  examples, first place lost:")
    for r in rows:
        first = r["first"]
        if first and shown["first:" + first["stage"]] < per:
            shown["first:" + first["stage"]] += 1
            ev, win = first["evidence"], first["winner"]
            print(
                f"    {first['stage']} {r['qid']} {asked[r['qid']][:70]!r} ({first['detail']}, "
                f"outvoted by {first.get('outvoted_by', '-')})"
            )
            print(f"      first    {win}: {texts.get(win, '')[:110]!r}")
            print(f"      evidence {ev}: {texts.get(ev, '')[:110]!r}")
