"""Search-time variants swept in-process through the real search path (issue 30).

Opens an ingested data dir (``run.py --data-dir``) once per set, in-process, with the
answer cache off, and asks every query once per variant: a variant is a set of
``search.*`` values set on the live settings between passes (only what the search
reads at search time). The query's embedding is cached after the first pass, so a
variant costs a few seconds. ``run.py`` through the server stays the measurement of
record; this chooses what to send to it.

    python bench/quality/feedback.py --data-dir DIR --data data conv \\
        --variant feedback_depth=3 feedback_weight=0.5 --variant feedback_depth=5
    python bench/quality/feedback.py ... --channels     # the opt-in channels on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import intervals  # noqa: E402
from metrics import score  # noqa: E402
from run import keys_of, load_jsonl  # noqa: E402

from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteQuery  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402


def _reinit(search: Any) -> None:
    """What the search derives from its settings when it is made, derived again."""
    c, s = search.calibration, search.settings
    pick = lambda own, model: model if own is None else own  # noqa: E731
    search.high_first_margin = pick(s.high_first_margin, c.high_first_margin)
    search.keep_margin = pick(s.keep_margin, c.keep_margin)
    search.language_shift = pick(s.language_shift, c.language_shift)
    search.wide_shift = pick(s.wide_shift, c.wide_shift)
    search.newer_similarity = pick(s.newer_similarity, c.newer_similarity)
    search.vectors.language_shift = search.language_shift
    search.vectors.wide_shift = search.wide_shift
    search.materialise.newer_similarity = search.newer_similarity
    search.materialise.newer_ratio = s.newer_ratio
    search.memo._entries.clear()  # the query views are kept per query


def parse(pairs: list[str]) -> dict[str, Any]:
    return {
        k: json.loads(v) if v[:1] in "[{0123456789.-tf" else v
        for k, v in (p.split("=", 1) for p in pairs)
    }


async def sweep(
    data_dir: Path, folder: Path, variants: list[dict[str, Any]], channels: bool, top: int
) -> list[list[dict[str, Any]]]:
    queries = load_jsonl("queries.jsonl", folder)
    keys = keys_of(data_dir)
    embedder: dict[str, Any] = {"channels": ["use", "minilm"] if channels else []}
    settings = KiokuSettings(
        data_dir=data_dir,
        embedder=embedder,
        search={"answer_cache_size": 0, "channel_weights": {"minilm": 1.0}},
    )
    scope = settings_scope(settings)
    out = []
    async with open_app(settings) as app:
        services = Services.over(app)
        live = app.search.settings

        async def terms_of(fed: list[Any]) -> dict[str, Any]:
            # the latent-terms prototype reads the feeders' terms from the truth store
            out: dict[str, Any] = {}
            for kind in ("note", "record"):
                ids = {
                    str(c.payload.get("source_id")): c.point_id
                    for c in fed
                    if c.payload.get("kind", "note") == kind
                }
                got = await app.vectors.get(kind, app.embedder.model_id, list(ids))
                out.update({ids[sid]: v.terms for sid, v in got.items() if v.terms is not None})
            return out

        app.search.feedback.terms_of = terms_of
        base = live.model_dump()
        for variant in variants:
            for k, v in base.items():
                setattr(live, k, v)
            for k, v in variant.items():
                setattr(live, k, v)
            _reinit(app.search)
            rows = []
            for q in queries:
                asked = NoteQuery(
                    query=q["query"], top=top, type=q.get("type", ""), domain=q.get("domain", "")
                )
                res = await services.notes.search(scope, asked)
                ranked = [keys.get(r.id, r.id) for r in res.results]
                rows.append(
                    {
                        "qid": q["qid"],
                        "kind": q["kind"],
                        "lang": q["lang"],
                        "split": q["split"],
                        **score(ranked, set(q["relevant"])),
                        "ranked": ranked,
                    }
                )
            out.append(rows)
    return out


def summary(name: str, label: str, rows: list[dict[str, Any]], base: list[dict[str, Any]]) -> None:
    for split in ("dev", "test"):
        sel = [(r, b) for r, b in zip(rows, base, strict=True) if r["split"] == split]
        if not sel:
            continue
        groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        for r, b in sel:
            groups["ALL"].append((r, b))
            groups[r["kind"]].append((r, b))
        parts = []
        for g in sorted(groups, key=lambda g: (g != "ALL", g)):
            pairs = groups[g]
            mean = statistics.fmean(r["nDCG@10"] for r, _ in pairs)
            diff = statistics.fmean(r["nDCG@10"] - b["nDCG@10"] for r, b in pairs)
            parts.append(f"{g[:6]}={mean:.3f}({diff:+.3f})")
        _, lo, hi = intervals.paired([b for _, b in sel], [r for r, _ in sel], "nDCG@10")
        print(
            f"{name:5s} {split:4s} [{lo:+.3f},{hi:+.3f}] {label:40s} " + " ".join(parts), flush=True
        )


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--data", nargs="+", default=["data", "conv"])
    ap.add_argument("--variant", nargs="*", action="append", default=[])
    ap.add_argument("--channels", action="store_true")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--splits", default="dev")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    variants = [{}] + [parse(v) for v in args.variant]
    saved: dict[str, Any] = {}
    for name in args.data:
        results = await sweep(args.data_dir / name, HERE / name, variants, args.channels, args.top)
        for variant, rows in zip(variants, results, strict=True):
            label = " ".join(f"{k}={v}" for k, v in variant.items()) or "base"
            keep = [r for r in rows if r["split"] in args.splits.split(",")]
            base = [r for r in results[0] if r["split"] in args.splits.split(",")]
            summary(name, label, keep, base)
        saved[name] = results
    if args.out:
        args.out.write_text(json.dumps(saved))


if __name__ == "__main__":
    asyncio.run(main())
