"""An honest "nothing matches": calibrate ``search/match.py``'s bars, report on test.

Asks every question of each distribution (``data/`` generated, ``conv/``
conversational; never ``heldout/``) and the out-of-scope questions written for it
(``nomatch/queries.jsonl``: no memory of that set answers them; en/ja/th, far topics
and near-domain ones, split dev/test) through the real search path in-process
(``services.notes.search``, answer cache off), and records the evidence ``match.judge``
is given (``match.Signals``) with the answer's match level. The unknown-terms share is
read for every answered question (the search reads it only near the bar, where it can
change the answer: the same judgement, ``match.wants_unknown``).

Then, on dev only, per configuration (``--channels``): the channel weights, the
unknown-terms weight (swept, and held at 0 for comparison) and bar that flag the most
out-of-scope questions while flagging at most ``--budget`` (2 %) of each set's
answerable questions ("flagged": the answer's match is not "strong"); and on test, with
the bars in ``match.BARS`` (the shipped ones) and the dev choices: per distribution, the
share of answerable questions flagged and of out-of-scope ones flagged, each with a 95 %
bootstrap interval (``intervals.bootstrap``), and how many questions the search reads
the unknown terms for.

    python bench/quality/run.py --modes hybrid --data-dir DIR      # ingest once
    python bench/quality/nomatch.py --data-dir DIR                  # channels off
    python bench/quality/nomatch.py --data-dir DIR --channels static_use minilm
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import intervals  # noqa: E402
import numpy as np  # noqa: E402
from metrics import score  # noqa: E402
from run import ensure_channels, keys_of, load_jsonl  # noqa: E402

import mcp_gateway.search.service as service_mod  # noqa: E402
from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteQuery  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.search import match  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402

SETS = {"data": HERE / "data", "conv": HERE / "conv"}
OUT_OF_SCOPE = HERE / "nomatch" / "queries.jsonl"


async def ask_all(data_dir: Path, name: str, channels: list[str], top: int) -> list[dict[str, Any]]:
    """One row per question (answerable, then out-of-scope): its signals and match."""
    answerable = load_jsonl("queries.jsonl", SETS[name])
    oos = [q for q in load_jsonl(OUT_OF_SCOPE.name, OUT_OF_SCOPE.parent) if q["set"] == name]
    keys = keys_of(data_dir)
    settings = KiokuSettings.model_validate(
        {
            "data_dir": data_dir,
            "embedder": {"channels": channels},
            "search": {"answer_cache_size": 0},
        }
    )
    scope = settings_scope(settings)
    seen: list[match.Signals] = []
    raw: list[dict[str, Any]] = []
    judge, signals = service_mod.judge, service_mod.signals

    def tapped_signals(dense: Any, channels: Any, reads: Any, exact: bool) -> match.Signals:
        def top(hits: Any) -> list[float]:
            cur = [h.score for h in hits if h.payload.get("current") is not False]
            return sorted(cur, reverse=True)[:50]

        def ids(hits: Any, can: Any = None) -> list[str]:
            """The memories of the best 10 current hits, best first (agreement signals)."""
            cur = sorted(
                (
                    h
                    for h in hits
                    if h.payload.get("current") is not False
                    and (can is None or h.payload.get("script", "latin") in can)
                ),
                key=lambda h: -h.score,
            )
            return list(dict.fromkeys(str(h.payload.get("source_id", h.id)) for h in cur))[:10]

        raw.append(
            {
                "dense_all": top([h for hits in dense for h in hits]),
                "dense_ids": ids([h for hits in dense for h in hits]),
                "channels_ids": {n: ids(hits, reads.get(n)) for n, hits in channels.items()},
                "channels_all": {
                    n: sorted(
                        (
                            h.score
                            for h in hits
                            if reads.get(n) is None or h.payload.get("script", "latin") in reads[n]
                        ),
                        reverse=True,
                    )[:50]
                    for n, hits in channels.items()
                },
            }
        )
        return signals(dense, channels, reads, exact)

    def tapped(sig: match.Signals, bars: Any, answered: bool) -> match.Match:
        seen.append(sig)
        return judge(sig, bars, answered)

    rows: list[dict[str, Any]] = []
    wants = service_mod.wants_unknown
    service_mod.judge = tapped
    service_mod.signals = tapped_signals
    # the unknown-terms share of every answered question, not only of those the shipped
    # bars would read it for: the calibration weighs it for any bars
    service_mod.wants_unknown = lambda _sig, _bars, answered: answered
    try:
        async with open_app(settings) as app:
            services = Services.over(app)
            for q, out in [(q, False) for q in answerable] + [(q, True) for q in oos]:
                seen.clear()
                raw.clear()
                asked = NoteQuery(
                    query=q["query"], top=top, type=q.get("type", ""), domain=q.get("domain", "")
                )
                res = await services.notes.search(scope, asked)
                sig = seen[0] if seen else match.Signals()
                ranked = [keys.get(r.id, r.id) for r in res.results]
                rows.append(
                    {
                        "qid": q["qid"],
                        "set": name,
                        "split": q["split"],
                        "lang": q["lang"],
                        "kind": q["kind"],
                        # out-of-scope questions by the round that wrote them (r28's
                        # test portion was written before any calibration on it)
                        "batch": q.get("batch", "r26"),
                        "oos": out,
                        "dense": sig.dense,
                        "channels": dict(sig.channels),
                        "exact": sig.exact,
                        "unknown": sig.unknown,
                        "named": sig.named,
                        **(raw[0] if raw else {}),
                        "answered": bool(res.results),
                        "match": res.match,
                        **({} if out else score(ranked, set(q["relevant"]))),
                    }
                )
    finally:
        service_mod.judge, service_mod.signals = judge, signals
        service_mod.wants_unknown = wants
    return rows


def _signals(row: dict[str, Any]) -> match.Signals:
    return match.Signals(
        dense=row["dense"],
        channels=row["channels"],
        exact=row["exact"],
        unknown=row.get("unknown"),
        named=row.get("named"),
    )


def flagged(row: dict[str, Any], bars: match.Bars | None) -> bool:
    return match.judge(_signals(row), bars, row["answered"]) != "strong"


def rate(rows: list[dict[str, Any]], bars: match.Bars | None, label: str) -> str:
    if not rows:
        return "n/a"
    values = [float(flagged(r, bars)) for r in rows]
    mean, lo, hi = intervals.bootstrap(values, label=label)
    return f"{sum(values):3.0f}/{len(values):3d} = {mean:.3f} [{lo:.3f}, {hi:.3f}]"


WEIGHTS = [round(0.02 * i, 2) for i in range(16)]  # a channel's weight: 0 to 0.30
NAMED = [round(0.01 * i, 2) for i in range(13)]  # an unknown name's weight: 0 to 0.12
# the bars before the unknown-names term, per channel set (for comparison, and the
# weights ``choose(base=...)`` keeps)
ROUND27 = {
    (): match.Bars(bar=0.8276, unknown=0.02),
    ("minilm", "static_use"): match.Bars(
        bar=0.8094, weights={"minilm": 0.18, "static_use": 0.02}, unknown=0.06
    ),
}


def columns(dev: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """``match.Bars.strength``'s terms per question, as arrays (the sweep is vectorised)."""
    return {
        "dense": np.asarray([r["dense"] or 0.0 for r in dev]),
        "channels": [
            np.asarray([r["channels"].get(n, match.CENTRE) - match.CENTRE for r in dev])
            for n in names
        ],
        "unknown": np.asarray([r.get("unknown") or 0.0 for r in dev]),
        "named": np.asarray([1.0 if r.get("named") else 0.0 for r in dev]),
    }


def choose(
    rows: list[dict[str, Any]],
    names: list[str],
    budget: float,
    unknown: bool,
    named: bool = False,
    kind_budget: float = 1.0,
    base: match.Bars | None = None,
) -> match.Bars | None:
    """On dev: the weights and bar flagging the most out-of-scope questions while
    flagging at most ``budget`` of each set's answerable ones (ties: the smaller
    weights, then the lower bar). ``unknown``, ``named``: that term's weight is swept
    too (else 0). ``kind_budget``: the most of each set's paraphrases (plain rewordings
    of what the store holds) it may flag. ``base``: its channel and unknown-terms
    weights are kept, only the unknown-names weight and the bar are chosen (one new
    term beside bars chosen before, not every weight again). Per weight combination, the highest bar
    within the budgets is the (k+1)-th lowest strength of each group's questions (k:
    the budget's count); the lowest bar flagging as many out-of-scope questions is the next
    strength above the highest out-of-scope one under it."""
    dev = [r for r in rows if r["split"] == "dev"]
    free = np.asarray([r["exact"] or not r["answered"] or r["dense"] is None for r in dev])
    groups = [(np.asarray([r["set"] == s and not r["oos"] for r in dev]), budget) for s in SETS] + [
        (np.asarray([r["set"] == s and r["kind"] == "paraphrase" for r in dev]), kind_budget)
        for s in SETS
    ]
    oos = np.asarray([r["oos"] for r in dev]) & ~free
    n_oos = max(1, sum(r["oos"] for r in dev))
    col = columns(dev, names)
    best: tuple[tuple[float, float, float], match.Bars] | None = None
    grids = [[base.weights.get(n, 0.0)] if base else WEIGHTS for n in names]
    units = [base.unknown] if base else WEIGHTS if unknown else [0.0]
    for *combo, u, m in itertools.product(*grids, units, NAMED if named else [0.0]):
        strength = col["dense"] + sum(w * c for w, c in zip(combo, col["channels"], strict=True))
        strength = strength - u * col["unknown"] - m * col["named"]
        top = math.inf
        for g, share in groups:
            mine = np.sort(strength[g & ~free])
            k = math.floor(share * int(g.sum()) + 1e-9)
            if k < len(mine):
                top = min(top, float(mine[k]))
        below = strength[oos] < top
        caught = float(below.sum() / n_oos)
        if below.any():
            highest = float(strength[oos][below].max())
            top = float(strength[~free][strength[~free] > highest].min())
        key = (caught, -sum(combo) - u - m, -top)
        if best is None or key > best[0]:
            # rounded down: a bar rounded up would flag the question it sits on
            bar = math.floor(top * 1e4) / 1e4
            weights = dict(zip(names, combo, strict=True))
            best = (key, match.Bars(bar=bar, weights=weights, unknown=u, named=m))
    return best[1] if best else None


def largest_named(
    rows: list[dict[str, Any]], budget: float, kind_budget: float, base: match.Bars
) -> match.Bars:
    """``base`` with the largest unknown-names weight that keeps its bar within the dev
    budgets: the term only adds flags, so nothing ``base`` flagged is lost (the
    shipped rule; a bar chosen again with it moved down and lost conversational
    out-of-scope questions, bench/LOG.md)."""
    dev = [r for r in rows if r["split"] == "dev"]
    groups = [([r for r in dev if r["set"] == s and not r["oos"]], budget) for s in SETS] + [
        ([r for r in dev if r["set"] == s and r["kind"] == "paraphrase"], kind_budget) for s in SETS
    ]
    chosen = base
    for weight in NAMED:
        probe = replace(base, named=weight)
        if all(sum(flagged(r, probe) for r in g) <= share * len(g) + 1e-9 for g, share in groups):
            chosen = probe
    return chosen


def report(
    rows: list[dict[str, Any]],
    bars: match.Bars | None,
    title: str,
    splits: tuple[str, ...] = tuple(intervals.SPLITS),
) -> None:
    print(f"\n{title}: {bars}")
    for split in splits:
        for s in SETS:
            part = [r for r in rows if r["split"] == split and r["set"] == s]
            answerable = [r for r in part if not r["oos"]]
            oos = [r for r in part if r["oos"]]
            print(
                f"  {split:4s} {s:4s} answerable flagged {rate(answerable, bars, s + split)}"
                f" | out-of-scope flagged {rate(oos, bars, s + split + 'x')}"
            )
            # plain rewordings of what the store holds must not read as unmatched
            para = [r for r in answerable if r["kind"] == "paraphrase"]
            print(f"  {split:4s} {s:4s} paraphrases flagged {rate(para, bars, s + split + 'p')}")
        mine = [r for r in rows if r["split"] == split]
        read = sum(
            match.wants_unknown(replace(_signals(r), unknown=None), bars, r["answered"])
            for r in mine
        )
        print(f"  {split:4s} unknown terms read for {read}/{len(mine)} questions")
        oos = [r for r in rows if r["split"] == split and r["oos"]]
        for s in SETS:
            for batch in sorted({r["batch"] for r in oos}):
                mine = [r for r in oos if r["set"] == s and r["batch"] == batch]
                got = rate(mine, bars, split + s + batch)
                print(f"  {split:4s} out-of-scope {s} {batch} flagged {got}")
        for lang in ("en", "ja", "th"):
            mine = [r for r in oos if r["lang"] == lang]
            print(f"  {split:4s} out-of-scope {lang} flagged {rate(mine, bars, split + lang)}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="run.py's kept data dirs")
    ap.add_argument("--channels", nargs="*", default=[])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--budget", type=float, default=0.02, help="answerable flagged, dev")
    ap.add_argument(
        "--kind-budget", type=float, default=1.0, help="paraphrases flagged, dev, per set"
    )
    ap.add_argument("--rows", type=Path, help="write (or, if it exists, read) the rows")
    ap.add_argument(
        "--dev-only", action="store_true", help="print dev figures only (while choosing)"
    )
    args = ap.parse_args()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = []
        for name in SETS:
            data_dir = args.data_dir / name
            if args.channels:
                await ensure_channels(
                    data_dir, {"KIOKU_EMBEDDER__CHANNELS": json.dumps(args.channels)}
                )
            rows += await ask_all(data_dir, name, args.channels, args.top)
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    names = sorted({n for r in rows for n in r["channels"]})
    model = "local/multilingual-e5-small-q4"
    print(f"channels: {args.channels or 'off'}; {len(rows)} questions")
    splits = ("dev",) if args.dev_only else tuple(intervals.SPLITS)
    report(rows, match.bars_for(model, args.channels), "shipped bars (match.BARS)", splits)
    for unknown, named in ((False, False), (True, False), (True, True)):
        chosen = choose(rows, names, args.budget, unknown, named, args.kind_budget)
        title = (
            f"chosen on dev (budget {args.budget}, unknown terms {'on' if unknown else 'off'},"
            f" unknown names {'on' if named else 'off'})"
        )
        report(rows, chosen, title, splits)
    if tuple(sorted(args.channels)) in ROUND27:
        before = ROUND27[tuple(sorted(args.channels))]
        report(rows, before, "round 27's bars", splits)
        chosen = choose(rows, names, args.budget, True, True, args.kind_budget, base=before)
        report(rows, chosen, "chosen on dev: round 27's weights, unknown names added", splits)
        kept = largest_named(rows, args.budget, args.kind_budget, before)
        report(rows, kept, "round 27's bars, the largest unknown-names weight they keep", splits)


if __name__ == "__main__":
    asyncio.run(main())
