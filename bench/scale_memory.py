"""Resident memory of the embedded index against its size, and what placement changes.

    python bench/scale_memory.py [--sizes 2000,10000,20000] [--searches 200]

For each size a shard is written in a child process through ``EdgeIndex`` (the
gateway's own code: its config, its payload indexes), closed, then opened in a fresh
child that prints resident memory (RssAnon, RssFile, MB) after the open and after
``--searches`` exact hybrid searches (dense + sparse + latent, the owner's filter),
with search p50/p95 (exact: the graph is a build process's, ``bench/hnsw_scale.py``).
SYNTHETIC points: dense vectors are random unit vectors (384-d, e5-small's size),
sparse and latent terms are Zipf-drawn ids with ~40 / 64 terms, the payload is a
note's (``indexing.points.note_payload`` fields); memory depends on counts and sizes,
not on what the vectors mean, so synthetic vectors measure it (not recall:
``bench/hnsw_scale.py`` does that on real e5 vectors).

Measured (bench/LOG.md): the sparse indexes' ``memory=Cold`` (with
``payload_memory``/``id_tracker_memory=Cold``) changed nothing at 2k and 10k: the
gateway never optimises its segments, and an appendable segment keeps its sparse
inverted index in RAM whatever the placement, so the option is not offered here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp_gateway.common.types import IndexPoint  # noqa: E402

DIM = 384


def rss() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("RssAnon", "RssFile"):
            out[key] = int(line.split()[1]) / 1024
    return out


def points(n: int, seed: int = 7) -> Iterator[IndexPoint]:
    import numpy as np

    from mcp_gateway.common.types import SparseVector, point_id

    rng = np.random.default_rng(seed)
    vocab = 50_000
    zipf = 1.0 / np.arange(1, vocab + 1)
    zipf /= zipf.sum()
    for i in range(n):
        dense = rng.standard_normal(DIM).astype(np.float32)
        dense /= np.linalg.norm(dense)
        terms = np.unique(rng.choice(vocab, 40, p=zipf))
        latent = np.unique(rng.integers(0, 30_000, 64))
        nid = f"01BENCH{i:019d}"
        yield IndexPoint(
            id=point_id("note", nid),
            payload={
                "kind": "note",
                "source_id": nid,
                "type": ["note", "lesson", "knowledge"][i % 3],
                "domain": ["", "infra", "db"][i % 3],
                "priority": "normal",
                "namespace": "default",
                "visible": "default",
                "created_at": 1.7e9 + i,
                "text_hash": f"{i:032x}",
                "script": "latin",
            },
            sparse=SparseVector(terms.tolist(), rng.random(len(terms)).tolist()),
            dense=dense.tolist(),
            latent=SparseVector(latent.tolist(), rng.random(len(latent)).tolist()),
        )


def child(args: argparse.Namespace) -> None:
    import anyio
    import numpy as np

    from mcp_gateway.common.types import IndexFilter, SparseVector
    from mcp_gateway.index import edge_shard
    from mcp_gateway.index.base import IndexSpec
    from mcp_gateway.index.edge import EdgeIndex
    from mcp_gateway.rebuild.build import BUILD_HNSW, BUILD_OPTIMIZERS, BUILD_QUANTIZATION

    pinned = args.placement == "pinned"
    edge_shard.SPARSE_MEMORY = None if pinned else edge_shard.qe.Memory.Cold
    exact_below = 10**9 if not args.optimize else 1
    spec = IndexSpec("bench", DIM, "synthetic", latent=True)

    async def write() -> None:
        index = EdgeIndex(
            spec,
            Path(args.dir),
            exact_search_below=exact_below,
            optimizers=BUILD_OPTIMIZERS if args.optimize else None,
            hnsw=BUILD_HNSW if args.optimize else None,
            quantization=BUILD_QUANTIZATION if args.optimize else None,
        )
        await index.open()
        batch = []
        for p in points(args.size):
            batch.append(p)
            if len(batch) == 512:
                await index.upsert(batch)
                batch = []
        await index.upsert(batch)
        if args.optimize:
            await index.build_graph()
        await index.close()

    async def read() -> dict[str, object]:
        base = rss()
        index = EdgeIndex(spec, Path(args.dir), exact_search_below=exact_below)
        await index.open()
        opened = rss()
        rng = np.random.default_rng(11)
        flt = IndexFilter(namespaces=("default",), current_only=True)
        times = []
        for _ in range(args.searches):
            q = rng.standard_normal(DIM).astype(np.float32)
            q /= np.linalg.norm(q)
            terms = sorted({int(t) for t in rng.integers(0, 2000, 6)})
            started = time.perf_counter()
            await index.search_channels(
                q.tolist(),
                SparseVector(terms, [1.0] * len(terms)),
                flt,
                50,
                latent=SparseVector(terms, [0.5] * len(terms)),
            )
            times.append((time.perf_counter() - started) * 1000)
        searched = rss()
        await index.close()
        times.sort()
        return {
            "base": base,
            "opened": opened,
            "searched": searched,
            "p50_ms": times[len(times) // 2],
            "p95_ms": times[int(len(times) * 0.95)],
        }

    if args.step == "write":
        anyio.run(write)
    else:
        print(json.dumps(anyio.run(read)))


def run(
    step: str, size: int, placement: str, directory: Path, searches: int, optimize: bool
) -> str:
    argv = [sys.executable, __file__, "--child", step, "--size", str(size)]
    argv += ["--optimize"] if optimize else []
    argv += ["--placement", placement, "--dir", str(directory), "--searches", str(searches)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,10000,20000")
    parser.add_argument("--placements", default="pinned,cold")
    parser.add_argument("--optimize", action="store_true", help="build the graph first")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--child", choices=["write", "read"])
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--placement", default="pinned")
    parser.add_argument("--dir", default="")
    args = parser.parse_args()
    if args.child:
        args.step = args.child
        child(args)
        return
    print("size | placement | open anon/file MB | searched anon/file MB | p50 / p95 ms")
    rows = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        for placement in args.placements.split(","):
            with tempfile.TemporaryDirectory(prefix="kioku-scale-mem-") as tmp:
                run("write", size, placement, Path(tmp), 0, args.optimize)
                out = run("read", size, placement, Path(tmp), args.searches, args.optimize)
                r = json.loads(out)
            o, s, b = r["opened"], r["searched"], r["base"]
            rows[(size, placement)] = s["RssAnon"] + s["RssFile"] - b["RssAnon"] - b["RssFile"]
            print(
                f"{size} | {placement} | {o['RssAnon'] - b['RssAnon']:.1f} / "
                f"{o['RssFile'] - b['RssFile']:.1f} | {s['RssAnon'] - b['RssAnon']:.1f} / "
                f"{s['RssFile'] - b['RssFile']:.1f} | {r['p50_ms']:.2f} / {r['p95_ms']:.2f}",
                flush=True,
            )
    sizes = sorted({k[0] for k in rows})
    if len(sizes) > 1:
        for placement in args.placements.split(","):
            lo, hi = rows[(sizes[0], placement)], rows[(sizes[-1], placement)]
            per_k = (hi - lo) / ((sizes[-1] - sizes[0]) / 1000)
            print(f"{placement}: {per_k:.2f} MB resident per 1,000 points (index alone)")


if __name__ == "__main__":
    main()
