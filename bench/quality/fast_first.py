"""Fast first vector: pending notes searched by a static vector before e5 reads them.

Simulates the index right after a burst (``fresh.py``'s state: the newest ``--burst``
memories lexical-only, the search embedding its best ``--top`` pending lexical hits
itself) and scores, per split, kind and query language:

- ``settled``: every memory embedded;
- ``+0s lexical``: the burst pending, judged on BM25 (and the search's own few);
- ``+0s pool ...``: the burst pending, with the fast pool's hits (the static
  vector, ``mcp_gateway.embedders.static``): as a further channel restricted to
  pending memories (``fuse``'s pending rule), at each ``--weights``; with
  ``--latin-only`` abstaining on memories or queries not in Latin script, with
  ``--asym`` the query's own e5 vector projected into the table's space (less a
  trained table's ``centre``: the shipped path, ``search.fast_first``'s query side);
  ``--table`` another built table, ``--oracle`` the pool scored by e5 itself.

Also the static vector alone against e5 alone (every memory embedded), nDCG@10.

    python bench/quality/fast_first.py [--data data|conv] [--burst 500] [--weights 0.5 1]
    python bench/quality/fast_first.py --data conv --asym --fixed shipped=0.72,0.20,0.4 \
        --pending 500 250 100 50      # the shipped mapping against lexical only
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import embcache  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="data")
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--top", type=int, default=3, help="pending hits a search embeds")
    ap.add_argument("--weights", type=float, nargs="*", default=[1.0], help="fast_weight")
    ap.add_argument("--raw-weights", type=float, nargs="*", default=[], help="as a channel")
    ap.add_argument("--pool-limit", type=int, default=50)
    ap.add_argument("--table", help="a built table (NAME of NAME.npy/.npz) for the shipped one")
    ap.add_argument("--latin-only", action="store_true", help="abstain on ja/th (as before)")
    ap.add_argument("--asym", action="store_true", help="the query's e5 vector, projected")
    ap.add_argument(
        "--oracle", action="store_true", help="the pool scored by e5 itself (a ceiling; map 0,1)"
    )
    ap.add_argument("--slopes", type=float, nargs="*", default=[])
    ap.add_argument("--pending", type=int, nargs="*", default=[500, 250, 100])
    ap.add_argument("--only", nargs="*", default=[], help="fits to score (ols, mom, top)")
    ap.add_argument(
        "--fixed",
        type=lambda v: (v.split("=")[0], tuple(map(float, v.split("=")[1].split(",")))),
        nargs="*",
        help="a,b[,floor]: a mapping fixed beforehand (the shipped one); pool hits whose "
        "static cosine is below floor dropped",
    )
    args = ap.parse_args()
    embcache.DATA = HERE / args.data
    from fresh import shipped_ranking
    from metrics import score
    from tune import channels, load

    from mcp_gateway.common.types import IndexHit
    from mcp_gateway.embedders import lexical
    from mcp_gateway.embedders.static import META_FILE, StaticEmbedder
    from mcp_gateway.search.fresh import PRIOR_MS_PER_BYTE, FreshLimits, choose
    from mcp_gateway.search.ranking import fuse, select

    c = load()
    docs = [embcache.memory_document(m) for m in c.mems]
    keys = [m["key"] for m in c.mems]
    static = StaticEmbedder.packaged()
    if args.table:  # the same tokenizer, another table
        base = args.table.removesuffix(".npy").removesuffix(".npz")
        meta = np.load(base + ".npz")
        static = StaticEmbedder(
            np.load(base + ".npy"), meta["ids"], meta["scales"], static.tokenizer
        )
    smat = static.encode(docs)
    scripts = [lexical.script_of(d[:2000]) for d in docs]
    payloads = [
        {**p, "script": s} if s != "latin" else p for p, s in zip(c.payloads, scripts, strict=True)
    ]
    c.payloads[:] = payloads
    qstat = {q["qid"]: static.encode([q["query"]])[0] for q in c.queries}
    if args.asym:  # the search's own e5 query vector in the table's space
        meta = np.load(args.table.removesuffix(".npy") + ".npz" if args.table else META_FILE)
        centre = meta["centre"] if "centre" in meta.files else meta["mean"]  # a trained table's
        for q in c.queries:
            v = (c.qvec[q["qid"]] - centre) @ meta["components"]
            qstat[q["qid"]] = v / np.linalg.norm(v)
    if args.oracle:  # what a perfect fast vector could give through the same path
        smat = c.dmat.astype(np.float32)
        qstat = {q["qid"]: np.asarray(c.qvec[q["qid"]], np.float32) for q in c.queries}
    params, sparse_weight = shipped_ranking()
    size = [len(d.encode()) for d in docs]
    limits = FreshLimits(args.top, 2000, 60.0)
    newest = keys[-args.burst :]
    pend_all = frozenset(newest)

    def pool_hits(q: dict[str, Any], pend: frozenset[str]) -> list[IndexHit]:
        if args.latin_only and lexical.script_of(q["query"]) != "latin":
            return []
        mask = c.current & np.array([k in pend for k in keys])
        if q.get("type"):
            mask &= np.array([m["type"] == q["type"] for m in c.mems])
        if args.latin_only:
            mask &= np.array([s == "latin" for s in scripts])
        sims = np.where(mask, smat @ qstat[q["qid"]], -np.inf)
        order = np.argsort(-sims)[: args.pool_limit]
        return [
            IndexHit(keys[i], float(sims[i]), {**payloads[i], "dense": False})
            for i in order
            if np.isfinite(sims[i])
        ]

    # static cosine -> e5 cosine, fitted on the dev queries' pairs (every current memory)
    dev = [q for q in c.queries if q["split"] == "dev"] or c.queries  # heldout: no dev
    latin = c.current & (np.array([s == "latin" for s in scripts]) if args.latin_only else True)
    xs = np.concatenate([smat[latin] @ qstat[q["qid"]] for q in dev])
    ys = np.concatenate([c.dmat[latin] @ c.qvec[q["qid"]] for q in dev])
    b_ols, a_ols = np.polyfit(xs, ys, 1)
    b_mom = ys.std() / xs.std()
    a_mom = ys.mean() - b_mom * xs.mean()
    # the same on each query's top 50 by static cosine: the pairs the pool returns
    top_x, top_y = [], []
    for q in dev:
        sx = np.where(latin, smat @ qstat[q["qid"]], -np.inf)
        idx = np.argsort(-sx)[:50]
        top_x.append(sx[idx])
        top_y.append((c.dmat @ c.qvec[q["qid"]])[idx])
    tx, ty = np.concatenate(top_x), np.concatenate(top_y)
    b_top, a_top = np.polyfit(tx, ty, 1)
    print(
        f"fit all pairs OLS a={a_ols:.3f} b={b_ols:.3f}; moments a={a_mom:.3f} b={b_mom:.3f}; "
        f"top-50 OLS a={a_top:.3f} b={b_top:.3f}; corr all {np.corrcoef(xs, ys)[0, 1]:.3f}"
    )
    cal: dict[str, tuple[float, ...]] = {
        "ols": (a_ols, b_ols),
        "mom": (a_mom, b_mom),
        "top": (a_top, b_top),
    }
    for b in args.slopes:  # a slope, the intercept that keeps the means (as "mom")
        cal[f"b={b:g}"] = (float(ys.mean() - b * xs.mean()), b)
        print(f"slope {b:g}: intercept {cal[f'b={b:g}'][0]:.4f}")
    if args.only:
        cal = {k: v for k, v in cal.items() if k in args.only or k.startswith("b=")}
    for name, ab in args.fixed or []:
        cal[name] = ab

    def run(
        label: str, pending: frozenset[str], weight: float | None, mapping: str = ""
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for q in c.queries:
            pend = pending
            if limits.top and pend:
                _, sparse = channels(c, q, pending=pend)
                met = [h.id for h in sparse if h.id in pend][: limits.top]
                picked = choose([size[keys.index(k)] for k in met], limits, PRIOR_MS_PER_BYTE)
                pend = pend - {met[i] for i in picked}
            dense, sparse = channels(c, q, pending=pend)
            p = replace(
                params,
                sparse_weight=sparse_weight(q["query"], params),
                fast_weight=weight if weight is not None else params.fast_weight,
            )
            fast = pool_hits(q, pend) if (weight is not None or mapping) and pend else []
            if mapping == "raw-channel":  # the static cosine as it is, its own DBSF scale
                cands = fuse(
                    dense,
                    sparse,
                    replace(p, fast_weight=0.0),
                    None,
                    [fast],
                    [weight or 0.0],
                    [None],
                )
            else:
                if mapping:  # onto e5's scale (the shipped path)
                    a, b, *floor = cal[mapping]
                    least = floor[0] if floor else -1.0
                    fast = [
                        IndexHit(h.id, a + b * h.score, h.payload) for h in fast if h.score >= least
                    ]
                cands = fuse(dense, sparse, p, None, fast=fast)
            ranked = [str(x.payload["source_id"]) for x in select(cands, p, 10)]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        report(label, rows)
        return rows

    def report(label: str, rows: list[dict[str, Any]]) -> None:
        for split in ("dev", "test"):
            sel = [r for r in rows if r["split"] == split]
            groups: dict[str, list[float]] = defaultdict(list)
            for r in sel:
                groups["ALL"].append(r["nDCG@10"])
                groups[r["kind"][:8]].append(r["nDCG@10"])
                groups["lang:" + r["lang"]].append(r["nDCG@10"])
            parts = " ".join(
                f"{g}={statistics.fmean(v):.3f}"
                for g, v in sorted(groups.items(), key=lambda x: (x[0] != "ALL", x[0]))
            )
            print(f"{label:22s} {split:4s} {parts}", flush=True)

    # each vector alone, every memory embedded
    for name, qv, mat in (
        ("e5 alone", None, c.dmat),
        ("static alone", qstat, smat),
    ):
        rows: list[dict[str, Any]] = []
        for q in c.queries:
            v = c.qvec[q["qid"]] if qv is None else qv[q["qid"]]
            sims = np.where(c.current, mat @ v, -np.inf)
            ranked = [keys[i] for i in np.argsort(-sims)[:10]]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        report(name, rows)
    run("settled", frozenset(), None)
    if args.fixed:  # the shipped mapping against lexical only, the newest k pending
        for k in args.pending:
            pend = frozenset(newest[-k:])
            base = run(f"{k} pending lexical", pend, None)
            for name, _ab in args.fixed:
                interval(base, run(f"{k} pending {name}", pend, None, name))
        return
    run("+0s lexical", pend_all, None)
    for w in args.raw_weights:
        run(f"+0s raw channel w={w:g}", pend_all, w, "raw-channel")
    for m in cal:
        for w in args.weights:
            run(f"+0s pool {m} w={w:g}", pend_all, w, m)


def interval(base: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    """Paired bootstrap 95 % interval of the mean nDCG@10 change, per split, overall and
    for the kinds whose change is not within it, and how many queries moved up / down."""
    rng = np.random.default_rng(0)
    for split in ("dev", "test"):
        pairs = [(b, n) for b, n in zip(base, new, strict=True) if b["split"] == split]
        groups: dict[str, list[float]] = defaultdict(list)
        for b, n in pairs:
            d = n["nDCG@10"] - b["nDCG@10"]
            groups["ALL"].append(d)
            groups[b["kind"]].append(d)
        out = []
        for g, ds in sorted(groups.items(), key=lambda x: (x[0] != "ALL", x[0])):
            arr = np.array(ds)
            means = arr[rng.integers(0, len(arr), (2000, len(arr)))].mean(axis=1)
            lo, hi = np.percentile(means, [2.5, 97.5])
            if g == "ALL" or lo > 0 or hi < 0:
                out.append(f"{g} {arr.mean():+.4f} [{lo:+.4f}, {hi:+.6f}]")
        moved = np.array(groups["ALL"])
        up, down = int((moved > 0).sum()), int((moved < 0).sum())
        print(f"  change {split}: " + "; ".join(out) + f" (up {up}, down {down})", flush=True)


if __name__ == "__main__":
    main()
