"""Build an optimised edge collection (with an HNSW graph, or sealed) in a separate process.

``EdgeShard.optimize()`` holds the GIL for its whole run (3.7 s at 20k points: bench/LOG.md,
round 1, "Scale: 100k memories"), so the owner never calls it. Instead it runs

    python -m mcp_gateway.rebuild.build --db DB --root EDGE_ROOT --collection NAME \\
        --dim D --model M --project P

which opens the truth store (SQLite in WAL mode: the owner keeps writing meanwhile),
creates the new collection beside the live one, writes every live note and record with
its stored vector (``rebuild/fill.py``: the same points as an in-process rebuild), builds
the graph (``--seal``: optimises the segments without one: ``edge_graph``), flushes,
closes and exits 0. It prints one JSON line of progress per page.
The owner waits for it without blocking its loop (``run_build``), then loads the
collection and swaps it in (``services/reindex.py``); what was written during the build
is replayed there. Items with no stored vector for the model are written lexically; the
owner's reconcile queues them for embedding.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc
import qdrant_edge as qe

from mcp_gateway.index.base import DenseChannel, IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_shard import STORAGE
from mcp_gateway.rebuild.fill import fill_notes, fill_records, stored_channels, stored_vectors
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.db import Database, is_database_url
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore

log = logging.getLogger(__name__)

# The build optimises every segment, however small: it only runs when a graph is wanted.
BUILD_OPTIMIZERS = qe.EdgeOptimizersConfig(indexing_threshold=1)
# A denser graph than the engine's m=16 / ef_construct=100: better recall at 100k for a
# slower build, in this process, never the owner's (bench/LOG.md, round 3, "Performance").
BUILD_HNSW = qe.HnswIndexConfig(m=32, ef_construct=256, full_scan_threshold=10_000)
# The graph walks int8 copies of the dense vectors, held in memory (half turbo16's
# bytes: 38.8 MB at 100k notes), and the search rescores its candidates with the stored
# vectors (``edge_types.search_params``). 100k notes, same ef, same recall: the walk
# ~1.2-1.7x faster, a cached-embedding search ~0.92x, a new query no slower; mapped
# from the file instead, new queries after an open were slower (bench/LOG.md, "scale
# at 100k"). ``always_ram`` is what was measured (the engine calls it deprecated).
BUILD_QUANTIZATION = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True)
# A seal (below ``index.exact_search_below`` points, where searches scan exactly): the
# same optimised segments, their sparse indexes and dense vectors mapped from files
# (``edge_shard``), with no graph (m=0) and no int8 copies in memory: neither is read.
# 5k synthetic points of the shipped shape: 3.2 s, the engine's heap 28 -> 2 MB.
SEAL_HNSW = qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000)


# A database URL (it may carry a password) reaches the build through its environment,
# not its command line, which every user of the host can read (ps)
DB_ENV = "KIOKU_BUILD_DATABASE_URL"
DB_FROM_ENV = "env"


def build_env(db_path: Path | str) -> dict[str, str] | None:
    """The build process's environment: the owner's, plus the URL when there is one."""
    return {**os.environ, DB_ENV: str(db_path)} if is_database_url(db_path) else None


def build_command(
    db_path: Path | str,
    root: Path,
    spec: IndexSpec,
    project: str,
    dense_storage: str,
    graph: bool = True,
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcp_gateway.rebuild.build",
        "--db",
        DB_FROM_ENV if is_database_url(db_path) else str(db_path),
        "--root",
        str(root),
        "--collection",
        spec.collection,
        "--dim",
        str(spec.dim),
        "--model",
        spec.model_id,
        "--project",
        project,
        "--dense-storage",
        dense_storage,
        *(["--latent"] if spec.latent else []),
        *([] if graph else ["--seal"]),
        *[f"--channel={c.name}:{c.model_id}:{c.dim}" for c in spec.channels],
    ]


async def run_build(
    command: list[str],
    target_dir: Path,
    on_progress: Callable[[dict[str, int]], None],
    on_started: Callable[[int], None] = lambda _pid: None,
    env: dict[str, str] | None = None,
) -> None:
    """Run a build process to completion. Cancelled or failed, the process is killed
    and its half-built collection removed; the live collection is never touched."""
    done = False
    proc: anyio.abc.Process | None = None
    try:
        # stderr is inherited: the build's log lines go where the owner's go
        proc = await anyio.open_process(command, stdout=-1, stderr=None, env=env)
        on_started(proc.pid)
        assert proc.stdout is not None
        buf = b""
        async for chunk in proc.stdout:
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    on_progress(json.loads(line))
                except ValueError:
                    pass
        code = await proc.wait()
        if code != 0:
            raise RuntimeError(f"the index build process exited with status {code}")
        done = True
    finally:
        with anyio.CancelScope(shield=True):
            if proc is not None:
                if proc.returncode is None:
                    proc.kill()
                await proc.wait()
                await proc.aclose()
            if not done:
                await anyio.to_thread.run_sync(
                    lambda: shutil.rmtree(target_dir, ignore_errors=True)
                )


def _emit(**progress: int) -> None:
    sys.stdout.write(json.dumps(progress) + "\n")
    sys.stdout.flush()


async def build(
    db_path: Path | str,
    root: Path,
    spec: IndexSpec,
    project: str,
    dense_storage: str,
    graph: bool = True,
) -> int:
    """The build process's work; returns the points the build covers."""
    db = Database(db_path)
    await db.open()
    try:
        index = EdgeIndex(
            spec,
            root,
            optimizers=BUILD_OPTIMIZERS,
            hnsw=BUILD_HNSW if graph else SEAL_HNSW,
            quantization=BUILD_QUANTIZATION if graph else None,
            dense_storage=dense_storage,
        )
        await index.open()
        try:
            vectors_for = stored_vectors(VectorStore(db), spec.model_id)
            channels_for = stored_channels(VectorStore(db), spec)
            done = {"notes_done": 0, "records_done": 0}

            def count(key: str) -> Callable[[int], None]:
                def bump(n: int) -> None:
                    done[key] += n
                    _emit(**done)

                return bump

            await fill_notes(
                NoteStore(db), db, index, vectors_for, count("notes_done"), channels_for
            )
            await fill_records(
                RecordStore(db, project), index, vectors_for, count("records_done"), channels_for
            )
            await index.build_graph(graph)
            _emit(**done, graph_points=index.graph_points)
            return index.sealed_points
        finally:
            await index.close()
    finally:
        await db.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_gateway.rebuild.build")
    ap.add_argument("--db", required=True)  # a SQLite file, or "env": DB_ENV's URL
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--project", default="")
    ap.add_argument("--latent", action="store_true", help="with the latent-terms vector")
    ap.add_argument("--seal", action="store_true", help="optimise without an HNSW graph")
    ap.add_argument("--dense-storage", choices=sorted(STORAGE), default="turbo16")
    ap.add_argument(
        "--channel", action="append", default=[], help="a further dense channel: NAME:MODEL:DIM"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="build: %(message)s")
    channels = []
    for given in args.channel:
        name, _, rest = given.partition(":")
        model, _, dim = rest.rpartition(":")
        channels.append(DenseChannel(name, model, int(dim)))
    spec = IndexSpec(
        args.collection, args.dim, args.model, latent=args.latent, channels=tuple(channels)
    )
    db = os.environ[DB_ENV] if args.db == DB_FROM_ENV else args.db
    points = anyio.run(build, db, args.root, spec, args.project, args.dense_storage, not args.seal)
    what = "sealed" if args.seal else "HNSW graph over"
    log.info("built %s: %s %d points", spec.collection, what, points)
    return 0


if __name__ == "__main__":
    sys.exit(main())
