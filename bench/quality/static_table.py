"""Choosing the static table's build on dev: raw rows (``bench/static_rows.py``) ->
PCA width, SIF ``a``, pooled or own state, prefix; scored as the static vector alone.
With ``--tables``, built tables instead (``NAME.npy``/``.npz`` in the shipped format, e.g.
the trained ones of ``bench/static_train.py``; ``shipped``: the packaged table).

For each variant: the correlation of static cosines with e5's over every (dev query,
memory) pair, nDCG@10 of the static vector alone per query language, and the same with
the query's own e5 vector projected into the table's space against static notes
(``asym``). Coverage: the share of the texts' piece occurrences the table holds.

    python bench/quality/static_table.py --rows bench/results/rows_plain.npz --data data
    python bench/quality/static_table.py --tables shipped bench/results/tokenlearn/t1 --data conv
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import embcache  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", nargs="*", default=[])
    ap.add_argument("--tables", nargs="*", default=[], help="built tables (NAME or shipped)")
    ap.add_argument("--data", default="data")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--state", nargs="*", default=["mean", "own"])
    ap.add_argument("--dims", type=int, nargs="*", default=[128, 256])
    ap.add_argument("--a", type=float, nargs="*", default=[1e-3, 1e-4, 1e-5])
    ap.add_argument("--drop", type=int, nargs="*", default=[0], help="leading components cut")
    ap.add_argument("--keep", nargs="*", default=["0"], help="LATIN:HAN pieces kept (0: all)")
    args = ap.parse_args()
    embcache.DATA = HERE / args.data
    from metrics import score
    from tune import load

    from mcp_gateway.embedders.e5_onnx import model_path
    from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer
    from mcp_gateway.graphs import e5_file
    from training.static_build import kept_pieces, piece_weights, project

    c = load()
    model = e5_file.load(model_path("original"))
    tok = UnigramTokenizer(model.vocab)
    scores = model.vocab.scores
    docs = [embcache.memory_document(m) for m in c.mems]
    keys = [m["key"] for m in c.mems]
    qs = [q for q in c.queries if q["split"] == args.split]
    dtoks = [np.asarray(tok.encode(d[:4000])[:512], np.int64) for d in docs]
    qtoks = [np.asarray(tok.encode(q["query"]), np.int64) for q in qs]
    if args.tables:
        tables(args.tables, c, qs, keys, tok)
    for path in args.rows:
        raw = np.load(path)
        ids = raw["ids"]
        for keep in args.keep:
            kept = ids
            if keep != "0":  # ``kept_pieces``' choice
                latin, han = map(int, keep.split(":"))
                kept = kept_pieces(model, latin, han)
            inset = np.isin(ids, kept)
            total = sum(len(t) for t in dtoks) + sum(len(t) for t in qtoks)
            found = sum(int(np.isin(t, kept).sum()) for t in dtoks + qtoks)
            print(f"{path} keep={keep} ({len(kept)}): coverage {found / total:.4f}", flush=True)
            for state in args.state:
                mat = raw[state][inset].astype(np.float32)
                for dims in args.dims:
                    for drop in args.drop:
                        mean, comps = project(mat, dims + drop)
                        comps = comps[:, drop:]
                        rows = (mat - mean) @ comps
                        for a in args.a:
                            w = piece_weights(scores[kept], a)

                            def enc(
                                t: np.ndarray,
                                rows: np.ndarray = rows,
                                w: np.ndarray = w,
                                kept: np.ndarray = kept,
                            ) -> Any:
                                where = np.minimum(np.searchsorted(kept, t), len(kept) - 1)
                                r = where[kept[where] == t]
                                v = w[r] @ rows[r] if len(r) else np.zeros(rows.shape[1])
                                n = np.linalg.norm(v)
                                return v / n if n > 0 else v

                            smat = np.stack([enc(t) for t in dtoks])
                            label = f"  {state} d={dims} drop={drop} a={a:g}"
                            sym = {q["qid"]: enc(t) for q, t in zip(qs, qtoks, strict=True)}
                            asym = {}
                            for q in qs:
                                v = (c.qvec[q["qid"]] - mean) @ comps
                                asym[q["qid"]] = v / np.linalg.norm(v)
                            for name, qv in (("sym", sym), ("asym", asym)):
                                xs = np.concatenate([smat[c.current] @ qv[q["qid"]] for q in qs])
                                ys = np.concatenate(
                                    [c.dmat[c.current] @ c.qvec[q["qid"]] for q in qs]
                                )
                                rows_out: list[dict[str, Any]] = []
                                for q in qs:
                                    sims = np.where(c.current, smat @ qv[q["qid"]], -np.inf)
                                    ranked = [keys[i] for i in np.argsort(-sims)[:10]]
                                    rows_out.append({**q, **score(ranked, set(q["relevant"]))})
                                groups: dict[str, list[float]] = defaultdict(list)
                                for r in rows_out:
                                    groups["ALL"].append(r["nDCG@10"])
                                    groups[r["lang"]].append(r["nDCG@10"])
                                parts = " ".join(
                                    f"{g}={statistics.fmean(v):.3f}"
                                    for g, v in sorted(groups.items())
                                )
                                corr = np.corrcoef(xs, ys)[0, 1]
                                print(f"{label} {name}: corr {corr:.3f} {parts}", flush=True)


def tables(names: list[str], c: Any, qs: list[dict[str, Any]], keys: list[str], tok: Any) -> None:
    """Each built table's static vector alone: correlation with e5's cosines over every
    (query, current memory) pair, nDCG@10 overall and per query language, and against
    the first table the paired bootstrap interval of the change (overall and per
    language)."""
    from intervals import bootstrap
    from metrics import score

    from mcp_gateway.embedders import static

    docs = [embcache.memory_document(m) for m in c.mems]
    first: list[float] = []
    for name in names:
        base = str(static.ROWS_FILE.with_suffix("")) if name == "shipped" else name
        base = base.removesuffix(".npy").removesuffix(".npz")
        meta = np.load(base + ".npz")
        rows = np.load(base + ".npy")
        emb = static.StaticEmbedder(rows, meta["ids"], meta["scales"], tok)
        smat = emb.encode(docs)
        qv = {q["qid"]: emb.encode([q["query"]])[0] for q in qs}
        xs = np.concatenate([smat[c.current] @ qv[q["qid"]] for q in qs])
        ys = np.concatenate([c.dmat[c.current] @ c.qvec[q["qid"]] for q in qs])
        groups: dict[str, list[float]] = defaultdict(list)
        nds = []
        for q in qs:
            sims = np.where(c.current, smat @ qv[q["qid"]], -np.inf)
            ranked = [keys[i] for i in np.argsort(-sims)[:10]]
            nd = score(ranked, set(q["relevant"]))["nDCG@10"]
            nds.append(nd)
            groups["ALL"].append(nd)
            groups[q["lang"]].append(nd)
        parts = " ".join(f"{g}={statistics.fmean(v):.3f}" for g, v in sorted(groups.items()))
        corr = np.corrcoef(xs, ys)[0, 1]
        print(f"{name}: corr {corr:.3f} {parts}", flush=True)
        if not first:
            first = nds
            continue
        diffs: dict[str, list[float]] = defaultdict(list)
        for q, a, b in zip(qs, first, nds, strict=True):
            diffs["ALL"].append(b - a)
            diffs[q["lang"]].append(b - a)
        out = []
        for g, ds in sorted(diffs.items()):
            mean, lo, hi = bootstrap(ds, label=g)
            out.append(f"{g} {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        print("  change: " + "; ".join(out), flush=True)


if __name__ == "__main__":
    main()
