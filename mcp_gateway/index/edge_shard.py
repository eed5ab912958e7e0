"""Opening the embedded engine's shard: its config from the spec, the checks against
what is stored on disk, and engine errors turned into actionable ones (``EdgeIndex``
module docstring for the engine facts behind them)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import qdrant_edge as qe

from ..errors import IndexMismatch, StoreUnavailable
from .base import DENSE, LATENT, SPARSE, IndexSpec
from .edge_types import create_payload_indexes

CONFIG_FILE = "edge_config.json"


def shard_config(
    spec: IndexSpec,
    optimizers: qe.EdgeOptimizersConfig | None,
    hnsw: qe.HnswIndexConfig | None,
) -> qe.EdgeConfig:
    sparse = {SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    if spec.latent:
        # plain dot product, no IDF. Always through the inverted index: below its
        # default threshold the engine scans every point, and a latent query's 64
        # terms meet most notes (2k notes: 3.1 -> 0.84 ms a search, same hits)
        sparse[LATENT] = qe.EdgeSparseVectorParams(full_scan_threshold=1)
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=spec.dim, distance=qe.Distance.Cosine)},
        sparse_vectors=sparse,
        optimizers=optimizers,
        hnsw_config=hnsw,
    )


def open_shard(
    directory: Path,
    spec: IndexSpec,
    optimizers: qe.EdgeOptimizersConfig | None = None,
    hnsw: qe.HnswIndexConfig | None = None,
) -> tuple[qe.EdgeShard, IndexSpec]:
    """The shard in ``directory`` (created when absent) and the spec it was opened with:
    a stored shard keeps the latent vector it was made with or without (the engine
    refuses a config whose vector names differ)."""
    exists = (directory / CONFIG_FILE).exists()
    stored, latent = _stored(directory) if exists else (None, spec.latent)
    if stored is not None and stored != spec.dim:
        raise _mismatch(directory, spec, stored)
    if exists and latent != spec.latent:
        spec = dataclasses.replace(spec, latent=latent)
    try:
        if exists:
            shard = qe.EdgeShard.load(str(directory), shard_config(spec, optimizers, hnsw))
        else:
            directory.mkdir(parents=True, exist_ok=True)
            shard = qe.EdgeShard.create(str(directory), shard_config(spec, optimizers, hnsw))
    except Exception as exc:
        msg = str(exc)
        if "WouldBlock" in msg:
            raise StoreUnavailable(
                f"the index at {directory} is open in another process: `kioku status` "
                "names the kioku process that owns this data dir and `kioku stop` "
                "stops it; CLI commands go through it instead of opening the index"
            ) from exc
        if "ncompatible" in msg:
            raise _mismatch(directory, spec, "other") from exc
        raise StoreUnavailable(f"cannot open the index at {directory}: {msg}") from exc
    try:
        create_payload_indexes(shard)
    except Exception:
        shard.close()
        raise
    return shard, spec


def _stored(directory: Path) -> tuple[int | None, bool]:
    """The stored shard's dense size and whether it has the latent vector."""
    try:
        stored = json.loads((directory / CONFIG_FILE).read_text("utf-8"))
        return int(stored["vectors"][DENSE]["size"]), LATENT in stored["sparse_vectors"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, False


def _mismatch(directory: Path, spec: IndexSpec, stored: int | str) -> IndexMismatch:
    return IndexMismatch(
        f"the index at {directory} was built for {stored}-dimensional vectors, but the "
        f"embedder {spec.model_id!r} produces {spec.dim}; run `kioku reindex`"
    )
