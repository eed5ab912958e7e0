"""Where a question's evidence is lost: each stage of the real search path, per question.

Opens kept data dirs (``run.py --data-dir``) in-process, answer cache off, and asks
every question through ``services.notes.search`` with the search module's own steps
wrapped (nothing of the ranking is copied): the channels' hits going into ``fuse``,
the candidates going into ``select`` (after ``pin_exact`` and ``carry_to_heads``),
``select``'s answer, the materialised order (newer-first) and the folded answer. A
deeper index call with the same query views (``--depth``) gives each channel's rank
beyond the search's own candidate depth.

Each evidence memory missing from the top ``--top`` gets the first stage that lost it:

    a  no channel returned it (not a candidate); its dense rank at ``--depth`` reported
    c  a candidate, but outside its type's distance threshold and no lexical/channel pass
    d  within the threshold, dropped by the keep margin and not filled back
    f  kept, but fused below ``top`` others
    e  in ``select``'s answer, then moved out by newer-first or folded
    g  anything else (a ghost point)

and each question whose first result is not evidence gets why its best evidence is not
first: the same letters for a lost one; ``f`` (fused below the first hit, with the part
of the score that outvoted it) or ``e`` (priority/pin order in ``select``, newer-first
after it).

    python bench/quality/loss.py --data-dir DIR --data conv data [--channels static_use minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from loss_report import compare, examples, table  # noqa: E402
from metrics import score  # noqa: E402
from run import keys_of, load_jsonl  # noqa: E402

import mcp_gateway.search.service as service_mod  # noqa: E402
from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteQuery  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.search import ranking  # noqa: E402
from mcp_gateway.search.reorder import asks  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402

PARTS = ("dense", "latent", "channel", "sparse", "fast", "factor")


class Tap:
    """The wrapped steps of one search write what they saw here."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def install(self, search: Any) -> None:
        orig_fuse, orig_select = service_mod.fuse, service_mod.select
        orig_call, orig_mat = search._index_call, search.materialise

        def fuse(dense: Any, sparse: Any, params: Any, latent: Any = None, *a: Any) -> Any:
            out = orig_fuse(dense, sparse, params, latent, *a)
            channels = a[0] if a else []
            self.seen["fuse_in"] = (list(dense), list(sparse), latent, [list(c) for c in channels])
            self.seen["dense_parts"] = dict(
                zip(
                    [h.id for h in dense],
                    ranking._contributions(dense, params, params.dense_weight),
                    strict=True,
                )
            )
            return out

        def select(candidates: Any, params: Any, top: int, namespaces: Any = ()) -> Any:
            self.seen["cands"] = [_snap(c) for c in candidates]
            self.seen["params"] = params
            out = orig_select(candidates, params, top, namespaces)
            self.seen["chosen"] = [c.point_id for c in out]
            return out

        async def index_call(
            views: Any, sparse: Any, flt: Any, limit: int, terms: Any, more: Any = None
        ) -> Any:
            self.seen["call"] = (views, flt, terms, more)
            return await orig_call(views, sparse, flt, limit, terms, more)

        class Mat:
            async def __call__(_, chosen: Any, generation: Any) -> Any:
                out = await orig_mat(chosen, generation)
                self.seen["materialised"] = [r.id for r in out]
                return out

            def __getattr__(_, name: str) -> Any:
                return getattr(orig_mat, name)

        self.materialiser = orig_mat
        service_mod.fuse, service_mod.select = fuse, select
        search._index_call, search.materialise = index_call, Mat()


def _snap(c: ranking.Candidate) -> dict[str, Any]:
    return {
        "id": c.point_id,
        "source": str(c.payload.get("source_id")),
        "score": c.score,
        "distance": c.distance,
        "dense_rank": c.dense_rank,
        "sparse_rank": c.sparse_rank,
        "sparse_score": c.sparse_score,
        "latent": c.latent_part,
        "channel": c.channel_part,
        "channel_rank": c.channel_rank,
        "sparse_part": c.sparse_part,
        "fast": c.fast_part,
        "prior": float(c.payload.get("prior", 1.0)),
        "priority": c.priority,
        "type": c.type,
        "exact": c.exact,
    }


def _parts(s: dict[str, Any], dense_parts: dict[str, float], semantic: bool) -> dict[str, float]:
    """The fused score's shares (before the prior/boost/abstain factor, which is its own)."""
    dense = dense_parts.get(s["id"], 0.0)
    found = s["dense_rank"] is not None or s["latent"] or s["channel"] or s["fast"]
    sparse = 0.0 if semantic and found else s["sparse_part"]
    raw = dense + s["latent"] + s["channel"] + sparse + s["fast"]
    return {
        "dense": dense,
        "latent": s["latent"],
        "channel": s["channel"],
        "sparse": sparse,
        "fast": s["fast"],
        "factor": s["score"] - raw,
    }


def stage_of(key: str, seen: dict[str, Any], keys: dict[str, str], top: int) -> tuple[str, str]:
    """The first stage that lost evidence ``key`` from the top ``top`` (and a detail)."""
    params = seen["params"]
    cands = seen["cands"]
    by_key = {keys.get(c["source"], c["source"]): c for c in cands}
    c = by_key.get(key)
    if c is None:
        return "a", "not a candidate"
    best_sparse = max((x["sparse_score"] or 0.0 for x in cands), default=0.0)
    best_distance = min((x["distance"] for x in cands if x["distance"] is not None), default=2.0)
    cand = ranking.Candidate(c["id"], {"type": c["type"], "priority": c["priority"]})
    cand.distance, cand.channel_rank, cand.sparse_score = (
        c["distance"],
        c["channel_rank"],
        c["sparse_score"],
    )
    kept = c["exact"] or ranking.passes_threshold(cand, params, best_sparse, best_distance)
    chosen_keys = [keys.get(_source(seen, pid), pid) for pid in seen["chosen"]]
    if not kept and key not in chosen_keys:
        if c["distance"] is not None and c["distance"] <= params.threshold_for(c["type"]):
            why = "high priority" if c["priority"] == "high" else "fill full"
            return "d", why
        return "c", "no distance" if c["distance"] is None else "beyond threshold"
    if key not in chosen_keys:
        return "f", "kept below top"
    mat = [keys.get(i, i) for i in seen["materialised"]]
    if key in mat[:top]:
        return "e", "folded"
    if key in mat:
        return "e", "newer-first or questions after, below top"
    return "g", "ghost"


def _where(key: str, seen: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    """A lost candidate's place in the fused order and its channels' evidence."""
    order = [keys.get(c["source"], c["source"]) for c in seen["cands"]]
    if key not in order:
        return {}
    c = seen["cands"][order.index(key)]
    best = min((x["distance"] for x in seen["cands"] if x["distance"] is not None), default=None)
    latent = [keys.get(str(h.payload.get("source_id")), h.id) for h in seen["fuse_in"][2] or []]
    return {
        "fused_pos": order.index(key) + 1,
        "distance": c["distance"],
        "best_distance": best,
        "latent_rank": latent.index(key) + 1 if key in latent else None,
        "sparse_rank": c["sparse_rank"],
        "channel_rank": c["channel_rank"],
        "answer_len": len(seen["chosen"]),
    }


def _source(seen: dict[str, Any], pid: str) -> str:
    for c in seen["cands"]:
        if c["id"] == pid:
            return str(c["source"])
    return pid


async def analyse(
    data_dir: Path,
    folder: Path,
    channels: list[str],
    top: int,
    depth: int,
    splits: set[str],
    variants: list[dict[str, Any]],
    limit: int | None = None,
) -> list[list[dict[str, Any]]]:
    """Each question's rows, once per variant (``search.*`` values set between passes;
    the first variant is usually ``{}``, the settings as given)."""
    queries = [q for q in load_jsonl("queries.jsonl", folder) if q["split"] in splits][:limit]
    memories = {m["key"]: m for m in load_jsonl("memories.jsonl", folder)}
    keys = keys_of(data_dir)
    settings = KiokuSettings(
        data_dir=data_dir, embedder={"channels": channels}, search={"answer_cache_size": 0}
    )
    scope = settings_scope(settings)
    out: list[list[dict[str, Any]]] = []
    async with open_app(settings) as app:
        services = Services.over(app)
        tap = Tap()
        tap.install(app.search)
        live = app.search.settings
        base = live.model_dump()
        for variant in variants:
            for k, v in {**base, **variant}.items():
                setattr(live, k, v)
            # what the search's materialiser copied from the settings when it was made
            tap.materialiser.question_ratio = live.question_ratio if live.questions_after else None
            out.append(
                await _ask_all(app, services, scope, tap, queries, memories, keys, top, depth)
            )
    return out


async def _ask_all(
    app: Any,
    services: Any,
    scope: Any,
    tap: Tap,
    queries: list[dict[str, Any]],
    memories: dict[str, dict[str, Any]],
    keys: dict[str, str],
    top: int,
    depth: int,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if True:
        for q in queries:
            tap.seen = {}
            asked = NoteQuery(
                query=q["query"], top=top, type=q.get("type", ""), domain=q.get("domain", "")
            )
            res = await services.notes.search(scope, asked)
            seen = tap.seen
            final = [keys.get(r.id, r.id) for r in res.results]
            # each channel's rank at ``depth``, the same query views
            views, flt, terms, more = seen["call"]
            deep = await app.index.search_channels(
                views[0] if views else None,
                app.search.memo.sparse(q["query"]),
                flt,
                depth,
                more_dense=views[1:],
                latent=terms,
                channel_queries=more,
            )
            deep_rank: dict[str, dict[str, int]] = defaultdict(dict)
            lists = {"dense": deep.dense, "sparse": deep.sparse, "latent": deep.latent}
            lists.update({f"ch:{n}": h for n, h in deep.extra.items()})
            for name, hits in lists.items():
                for r, h in enumerate(hits, 1):
                    k = keys.get(str(h.payload.get("source_id")), h.id)
                    deep_rank[k].setdefault(name, r)
            relevant = q["relevant"]
            by_point = {c["source"]: c["score"] for c in seen["cands"]}
            lost = {}
            for key in relevant:
                if key not in final[:top]:
                    lost[key] = (*stage_of(key, seen, keys, top), _where(key, seen, keys))
            first = None
            if final and final[0] not in relevant:
                first = first_stage(q, final, seen, keys, memories, top, lost)
            rows.append(
                {
                    "qid": q["qid"],
                    "kind": q["kind"],
                    "lang": q["lang"],
                    "relevant": relevant,
                    "final": final,
                    "short": len(final) < top,
                    "lost": lost,
                    "deep": {k: deep_rank.get(k, {}) for k in relevant},
                    "first": first,
                    # each answer's fused score, in its order (to replay an ordering rule)
                    "scores": [by_point.get(i, 0.0) for i in seen["materialised"]],
                    **score(final, set(relevant)),
                }
            )
    return rows


def first_stage(
    q: dict[str, Any],
    final: list[str],
    seen: dict[str, Any],
    keys: dict[str, str],
    memories: dict[str, dict[str, Any]],
    top: int,
    lost: dict[str, tuple[str, str]],
) -> dict[str, Any]:
    """Why the best-placed evidence is not the first result."""
    relevant = q["relevant"]
    placed = [k for k in final if k in relevant]
    winner = final[0]
    out: dict[str, Any] = {"winner": winner}
    w_mem, conv = memories.get(winner, {}), q.get("conversation")
    out["same_conversation"] = bool(conv) and w_mem.get("conversation") == conv
    out["winner_asks"] = asks(w_mem.get("text", ""))
    if not placed:
        best = min(relevant, key=lambda k: "acdfeg".index(lost[k][0]))
        out["stage"], out["detail"] = lost[best][0], "lost: " + lost[best][1]
        out["evidence"] = best
    else:
        best = placed[0]
        out["evidence"] = best
        cands = seen["cands"]
        order = [keys.get(c["source"], c["source"]) for c in cands]
        chosen = [keys.get(_source(seen, p), p) for p in seen["chosen"]]
        mat = [keys.get(i, i) for i in seen["materialised"]]
        if chosen and chosen[0] != best and order.index(best) > order.index(chosen[0]):
            out["stage"], out["detail"] = "f", "fused below"
        elif chosen and chosen[0] != best:
            out["stage"], out["detail"] = "e", "select order (priority/pin)"
        elif mat and mat[0] != best:
            out["stage"], out["detail"] = "e", "newer-first or questions after"
        else:
            out["stage"], out["detail"] = "e", "folded"
    # what outvoted it: the shares of the winner's and the evidence's fused scores
    semantic = seen["fuse_in"][2] is not None
    snaps = {keys.get(c["source"], c["source"]): c for c in seen["cands"]}
    if winner in snaps and out["evidence"] in snaps:
        pw = _parts(snaps[winner], seen["dense_parts"], semantic)
        pe = _parts(snaps[out["evidence"]], seen["dense_parts"], semantic)
        diff = {p: pw[p] - pe[p] for p in PARTS}
        out["outvoted_by"] = max(diff, key=lambda p: diff[p])
        out["diff"] = diff
        out["dense_rank"] = (snaps[out["evidence"]]["dense_rank"], snaps[winner]["dense_rank"])
    if out["same_conversation"]:
        try:
            out["turn_gap"] = int(winner[-2:]) - int(out["evidence"][-2:])
        except ValueError:
            pass
    return out


def parse(pairs: list[str]) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in (p.split("=", 1) for p in pairs)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--data", nargs="+", default=["conv", "data"])
    ap.add_argument("--channels", nargs="*", default=[])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--depth", type=int, default=400)
    ap.add_argument("--splits", default="dev")
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--variant", nargs="*", action="append", default=[], help="KEY=VALUE (search.*)"
    )
    ap.add_argument("--examples", type=int, default=2, help="questions shown per bucket")
    ap.add_argument("--limit", type=int, help="the first N questions only (a quick check)")
    args = ap.parse_args()
    variants = [{}] + [parse(v) for v in args.variant]
    saved = {}
    for name in args.data:
        runs = await analyse(
            args.data_dir / name,
            HERE / name,
            args.channels,
            args.top,
            args.depth,
            set(args.splits.split(",")),
            variants,
            args.limit,
        )
        table(f"{name} {args.splits} channels={args.channels}", runs[0], args.top)
        examples(runs[0], HERE / name, args.examples)
        for variant, rows in zip(variants[1:], runs[1:], strict=True):
            compare(name, variant, runs[0], rows)
        saved[name] = runs
    if args.out:
        args.out.write_text(json.dumps(saved, default=str))


if __name__ == "__main__":
    asyncio.run(main())
