"""A memory that gets better with use, measured (``make bench-learning``, issue 49).

An assistant at work over simulated weeks, in-process over the real service layer
(``NoteService.search`` and ``services.learning.credit_used``: the same code the MCP
tools call, the real ranking), on the coding (``data/``) and conversational (``conv/``)
distributions, each ingested into its own data dir (``run.py``'s ingest; reused with
``--data-dir``).

Needs: the queries of a set that share one relevant set are one need, asked in each of
their wordings and in the other phrasing written for each (``alternatives/<set>.tsv``):
at most ``--askings`` askings a need, in a seeded random order. A need is first asked in
the first ``FIRST_DAYS`` days, each later asking after an exponential gap (mean
``GAP_DAYS``), up to ``WEEKS`` weeks.

The simulated assistant reads the top 5 it is shown. When relevant memories are among
them it uses them all, except with probability ``--wrong`` (0.2) when it uses the
best-ranked unrelated one instead; when none is relevant it acts on the first result
anyway with probability ``--wrong`` (a wrong pick), and otherwise uses nothing.
It says what it used (``used=[id]``), which is all that learning gets. With learning
off, the same askings run without it (no keys are ever stored).

Printed per set and split: nDCG@10 and R@1 of the later askings (every asking of a need
after its first), learning off -> on, paired per asking (bootstrap 95 %,
``intervals.bootstrap``), by week and overall; and the first askings, which learning
can only disturb (keys learned for other needs). Tune ``--min-cosine``/``--offset`` on
dev; the test needs are never tuned on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import intervals  # noqa: E402
from metrics import ndcg_at, recall_at  # noqa: E402
from run import ingest, load_jsonl  # noqa: E402

from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteQuery  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402
from mcp_gateway.services.learning import credit_used  # noqa: E402

DAY = 86_400.0
WEEKS = 5
FIRST_DAYS = 10.0
GAP_DAYS = 7.0
SHOWN = 5


@dataclass(slots=True)
class Asking:
    need: int
    order: int  # 0: the need's first asking
    at: float  # simulated seconds from the start
    query: str
    relevant: frozenset[str]
    split: str
    kind: str


@dataclass(slots=True)
class Outcome:
    asking: Asking
    ranked: list[str] = field(default_factory=list)


def needs_of(folder: Path, phrasings: Path, askings: int, seed: int) -> list[Asking]:
    queries = load_jsonl("queries.jsonl", folder)
    alts: dict[str, str] = {}
    if phrasings.exists():
        with phrasings.open(encoding="utf-8") as fh:
            alts = dict(line.rstrip("\n").split("\t", 1) for line in fh if line.strip())
    groups: dict[tuple[str, frozenset[str]], list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        if q.get("type") or q.get("domain"):
            continue  # a filtered query is another need than the same words unfiltered
        groups[(q["split"], frozenset(q["relevant"]))].append(q)
    rng = random.Random(seed)
    out: list[Asking] = []
    for n, ((split, relevant), qs) in enumerate(
        sorted(groups.items(), key=lambda g: g[1][0]["qid"])
    ):
        wordings = list(
            dict.fromkeys(
                [q["query"] for q in qs] + [alts[q["qid"]] for q in qs if q["qid"] in alts]
            )
        )
        if len(wordings) < 2:
            continue
        rng.shuffle(wordings)
        at = rng.uniform(0, FIRST_DAYS) * DAY
        for order, text in enumerate(wordings[:askings]):
            if order:
                at += rng.expovariate(1 / GAP_DAYS) * DAY
            if at >= WEEKS * 7 * DAY:
                break
            out.append(Asking(n, order, at, text, relevant, split, qs[0]["kind"]))
    return sorted(out, key=lambda a: a.at)


async def replay(
    data_dir: Path,
    askings: list[Asking],
    keys: dict[str, str],
    *,
    learn: bool,
    wrong: float,
    seed: int,
    overrides: dict[str, Any],
) -> tuple[list[Outcome], dict[str, int]]:
    settings = KiokuSettings(data_dir=data_dir)
    settings.search.answer_cache_size = 0
    for k, v in overrides.items():
        setattr(settings.search, k, v)
    scope = settings_scope(settings)
    rng = random.Random(seed)
    picks = {"right": 0, "wrong": 0, "none": 0}
    out: list[Outcome] = []
    async with open_app(settings, run_jobs=False) as app:
        services = Services.over(app)
        learned = app.search.learned
        assert learned is not None
        await app.db.transaction(lambda c: c.execute("DELETE FROM learned_keys"))
        learned.store.version += 1
        start = time.time()
        now = [start]
        learned.clock = lambda: now[0]
        for a in askings:
            now[0] = start + a.at
            response = await services.notes.search(scope, NoteQuery(query=a.query, top=10))
            ids = [r.id for r in response.results]
            out.append(Outcome(a, [keys.get(i, i) for i in ids]))
            if not learn:
                continue
            if a.order > 0:  # which memories the learned keys lifted for this asking
                views = (await app.search.vectors.embed(a.query))[0]
                lifted = await learned.matches(scope.write, views[0]) if views else {}
                hit = any(keys.get(i) in a.relevant for i in lifted)
                miss = any(keys.get(i) not in a.relevant for i in lifted)
                picks["key->relevant"] = picks.get("key->relevant", 0) + hit
                picks["key->other"] = picks.get("key->other", 0) + miss
            shown = ids[:SHOWN]
            right = [i for i in shown if keys.get(i) in a.relevant]
            others = [i for i in shown if keys.get(i) not in a.relevant]
            used: list[str] = []
            if right and rng.random() >= wrong:
                used, picks["right"] = right, picks["right"] + 1
            elif others and (right or rng.random() < wrong):
                used, picks["wrong"] = others[:1], picks["wrong"] + 1
            else:
                picks["none"] += 1
            if used:
                now[0] += 60  # it read, acted, and said so on its next call
                await credit_used(app, scope, used)
    return out, picks


def metrics(o: Outcome) -> tuple[float, float]:
    rel = set(o.asking.relevant)
    return ndcg_at(o.ranked, rel, 10), recall_at(o.ranked, rel, 1)


def worst(off: list[Outcome], on: list[Outcome], n: int) -> None:
    """The ``n`` askings learning hurt most (nDCG@10), to read where it goes wrong."""
    pairs = sorted(zip(off, on, strict=True), key=lambda p: metrics(p[1])[0] - metrics(p[0])[0])
    for a, b in pairs[:n]:
        drop = metrics(b)[0] - metrics(a)[0]
        if drop >= 0:
            break
        print(
            f"  {drop:+.2f} #{a.asking.order} {a.asking.query[:60]!r} "
            f"off {a.ranked[:3]} on {b.ranked[:3]} want {sorted(a.asking.relevant)}"
        )


def report(name: str, off: list[Outcome], on: list[Outcome], splits: tuple[str, ...]) -> None:
    print(f"\n== {name}: learning off -> on (paired per asking, bootstrap 95 %)")
    for split in splits:
        pairs = [(a, b) for a, b in zip(off, on, strict=True) if a.asking.split == split]
        groups: list[tuple[str, list[tuple[Outcome, Outcome]]]] = [
            ("first askings", [p for p in pairs if p[0].asking.order == 0]),
            ("later askings", [p for p in pairs if p[0].asking.order > 0]),
        ]
        for week in range(WEEKS):
            sel = [
                p
                for p in pairs
                if p[0].asking.order > 0 and int(p[0].asking.at // (7 * DAY)) == week
            ]
            if sel:
                groups.append((f"  later, week {week + 1}", sel))
        for label, sel in groups:
            if not sel:
                continue
            cells = []
            for m, metric in enumerate(("nDCG@10", "R@1")):
                a = [metrics(p[0])[m] for p in sel]
                b = [metrics(p[1])[m] for p in sel]
                d, lo, hi = intervals.bootstrap(
                    [y - x for x, y in zip(a, b, strict=True)],
                    label=f"{name}{split}{label}{metric}",
                )
                was, now = sum(a) / len(a), sum(b) / len(b)
                cells.append(f"{metric} {was:.3f} -> {now:.3f} {d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            print(f"{split:4s} {label:22s} n={len(sel):4d}  " + "   ".join(cells))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["data", "conv"])
    ap.add_argument(
        "--data-dir", type=Path, help="reuse ingested data dirs (one subfolder per set)"
    )
    ap.add_argument("--splits", nargs="+", default=["dev", "test"])
    ap.add_argument("--askings", type=int, default=4, help="at most this many askings a need")
    ap.add_argument("--wrong", type=float, default=0.2, help="rate of wrong picks")
    ap.add_argument("--seed", type=int, default=49)
    ap.add_argument("--min-cosine", type=float)
    ap.add_argument("--offset", type=float)
    ap.add_argument("--cross-cosine", type=float, help="the bar of a key in another script")
    ap.add_argument(
        "--set", nargs="*", default=[], help="search settings, NAME=JSON (key_min_cosine=0.9)"
    )
    ap.add_argument("--worst", type=int, default=0, help="print the askings hurt most")
    args = ap.parse_args()
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="kioku-learning-"))
    overrides: dict[str, Any] = {}
    if args.min_cosine is not None:
        overrides["key_min_cosine"] = args.min_cosine
    if args.offset is not None:
        overrides["key_offset"] = args.offset
    if args.cross_cosine is not None:
        overrides["key_cross_cosine"] = args.cross_cosine
    for item in args.set:
        k, v = item.split("=", 1)
        overrides[k] = json.loads(v)
    for name in args.data:
        folder = HERE / name
        data_dir = root / name
        keys_file = data_dir / "bench-keys.json"
        if not keys_file.exists():
            data_dir.mkdir(parents=True, exist_ok=True)
            keys_file.write_text(
                json.dumps(await ingest(data_dir, load_jsonl("memories.jsonl", folder)))
            )
        keys = json.loads(keys_file.read_text())
        askings = [
            a
            for a in needs_of(
                folder, HERE / "alternatives" / f"{name}.tsv", args.askings, args.seed
            )
            if a.split in args.splits
        ]
        started = time.perf_counter()
        off, _ = await replay(
            data_dir,
            askings,
            keys,
            learn=False,
            wrong=args.wrong,
            seed=args.seed,
            overrides=overrides,
        )
        on, picks = await replay(
            data_dir,
            askings,
            keys,
            learn=True,
            wrong=args.wrong,
            seed=args.seed,
            overrides=overrides,
        )
        needs = len({a.need for a in askings})
        print(
            f"\n{name}: {needs} needs, {len(askings)} askings over {WEEKS} weeks; picks {picks} "
            f"(wrong-pick rate {args.wrong:.0%}); {time.perf_counter() - started:.0f} s"
        )
        report(name, off, on, tuple(args.splits))
        if args.worst:
            worst(off, on, args.worst)


if __name__ == "__main__":
    asyncio.run(main())
