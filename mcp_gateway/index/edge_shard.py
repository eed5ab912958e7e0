"""Opening the embedded engine's shard: its config from the spec, the checks against
what is stored on disk, and engine errors turned into actionable ones (``EdgeIndex``
module docstring for the engine facts behind them)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import qdrant_edge as qe

from mcp_gateway.common.errors import IndexMismatch, StoreUnavailable
from mcp_gateway.index.base import DENSE, LATENT, SPARSE, DenseChannel, IndexSpec
from mcp_gateway.index.edge_types import create_payload_indexes

CONFIG_FILE = "edge_config.json"
# the further dense channels a shard was made with (name, model, size): the engine's
# own config names the vectors but not the model that fills them
CHANNELS_FILE = "kioku_channels.json"
# How the dense vectors are stored (``index.dense_storage``). "turbo16": the engine's
# 16-bit TurboQuant storage, which it scans ~2x faster than float32 at the same
# ranking (bench/LOG.md, round 15, "dense vectors stored as 16-bit TurboQuant": 10k
# real e5 vectors, two exact query views 1.36 -> 0.73 ms, scores within 6e-6, recall@10
# 1.0); float16 was only 0.83x here.
STORAGE = {
    "float32": qe.VectorStorageDatatype.Float32,
    "turbo16": qe.VectorStorageDatatype.Turbo16,
}


# Where an optimised segment (a graph build's) keeps its sparse inverted indexes (BM25
# and latent terms). ``Cold``: mapped from their files, only the pages searches touch
# resident and reclaimable, instead of the engine's default copy in the heap. 20k
# synthetic points, optimised: 34.8 -> 14.1 MB anonymous after the open, 88.8 -> 83.0 MB
# resident after 150 searches, search not slower (bench/LOG.md). A plain
# (appendable) segment keeps its inverted index in the heap whatever this says. A stored
# shard opens with either placement.
SPARSE_MEMORY: qe.Memory | None = qe.Memory.Cold


def shard_config(
    spec: IndexSpec,
    optimizers: qe.EdgeOptimizersConfig | None,
    hnsw: qe.HnswIndexConfig | None,
    storage: str,
    quantization: qe.ScalarQuantizationConfig | None = None,
) -> qe.EdgeConfig:
    """``quantization``: the quantized copies a graph build makes of the dense vectors
    (None: a stored shard keeps what it has, a new one has none)."""
    sparse = {SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=SPARSE_MEMORY)}
    if spec.latent:
        # plain dot product, no IDF. Always through the inverted index: below its
        # default threshold the engine scans every point, and a latent query's 64
        # terms meet most notes (2k notes: 3.1 -> 0.84 ms a search, same hits)
        sparse[LATENT] = qe.EdgeSparseVectorParams(full_scan_threshold=1, memory=SPARSE_MEMORY)
    vectors = {DENSE: _dense(spec.dim, storage)}
    for channel in spec.channels:
        vectors[channel.vector_name] = _dense(channel.dim, storage)
    return qe.EdgeConfig(
        vectors=vectors,
        sparse_vectors=sparse,
        optimizers=optimizers,
        hnsw_config=hnsw,
        quantization_config=quantization,
    )


def _dense(dim: int, storage: str) -> qe.EdgeVectorParams:
    # Cold: a segment's dense vectors are mapped, not read in when it opens. The
    # engine's default (Cached) read a plain segment's whole 32 MB chunk into memory at
    # every open, however few vectors it held (10k notes: 7.7 MB of vectors, 32 MB
    # resident); now only the pages a search reads are. A segment keeps the placement
    # it was made with: an older shard's until `kioku reindex` makes a new one.
    return qe.EdgeVectorParams(
        size=dim, distance=qe.Distance.Cosine, datatype=STORAGE[storage], memory=qe.Memory.Cold
    )


def open_shard(
    directory: Path,
    spec: IndexSpec,
    optimizers: qe.EdgeOptimizersConfig | None,
    hnsw: qe.HnswIndexConfig | None,
    storage: str,
    quantization: qe.ScalarQuantizationConfig | None = None,
) -> tuple[qe.EdgeShard, IndexSpec, str]:
    """The shard in ``directory`` (created when absent with ``storage``), the spec it was
    opened with and its dense storage: a stored shard keeps the latent vector, the
    further dense channels and the storage it was made with (the engine refuses a
    config that differs in any; `kioku reindex` builds a new collection with the
    configured ones)."""
    exists = (directory / CONFIG_FILE).exists()
    stored = _stored(directory) if exists else _Stored(None, spec.latent, storage)
    if stored.dim is not None and stored.dim != spec.dim:
        raise _mismatch(directory, spec, stored.dim)
    if exists and stored.latent != spec.latent:
        spec = dataclasses.replace(spec, latent=stored.latent)
    if exists:
        spec = dataclasses.replace(spec, channels=stored_channels(directory))
    else:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / CHANNELS_FILE).write_text(
            json.dumps([dataclasses.asdict(c) for c in spec.channels]), "utf-8"
        )
    config = shard_config(spec, optimizers, hnsw, stored.storage, quantization)
    try:
        if exists:
            shard = qe.EdgeShard.load(str(directory), config)
        else:
            shard = qe.EdgeShard.create(str(directory), config)
    except Exception as exc:
        msg = str(exc)
        if "WouldBlock" in msg:
            raise StoreUnavailable(
                f"the index at {directory} is open in another process: `kioku status` "
                "names the kioku process that owns this data dir and `kioku stop` "
                "stops it; CLI commands go through it instead of opening the index"
            ) from exc
        if "ncompatible" in msg:
            raise IndexMismatch(
                f"the index at {directory} was made with another configuration than "
                f"this kioku opens it with ({msg}); run `kioku reindex`"
            ) from exc
        raise StoreUnavailable(f"cannot open the index at {directory}: {msg}") from exc
    try:
        create_payload_indexes(shard)
    except Exception:
        shard.close()
        raise
    return shard, spec, stored.storage


def stored_channels(directory: Path) -> tuple[DenseChannel, ...]:
    """The further dense channels the shard in ``directory`` was made with (none: made
    before channels existed, or without any)."""
    try:
        rows = json.loads((directory / CHANNELS_FILE).read_text("utf-8"))
        return tuple(DenseChannel(str(r["name"]), str(r["model_id"]), int(r["dim"])) for r in rows)
    except FileNotFoundError:
        return ()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreUnavailable(
            f"cannot read {directory / CHANNELS_FILE} ({exc}); run `kioku reindex`"
        ) from exc


@dataclasses.dataclass(frozen=True, slots=True)
class _Stored:
    dim: int | None  # None: unreadable (the engine's own check speaks then)
    latent: bool
    storage: str


def _stored(directory: Path) -> _Stored:
    """The stored shard's dense size, whether it has the latent vector, and how its
    dense vectors are stored (no ``datatype``: float32, as every shard an older kioku made)."""
    try:
        stored = json.loads((directory / CONFIG_FILE).read_text("utf-8"))
        dense = stored["vectors"][DENSE]
        storage = str(dense.get("datatype", "float32")).lower()
        if storage not in STORAGE:
            raise ValueError(f"unknown dense storage {storage!r}")
        return _Stored(int(dense["size"]), LATENT in stored["sparse_vectors"], storage)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return _Stored(None, False, "float32")


def _mismatch(directory: Path, spec: IndexSpec, stored: int) -> IndexMismatch:
    return IndexMismatch(
        f"the index at {directory} was built for {stored}-dimensional vectors, but the "
        f"embedder {spec.model_id!r} produces {spec.dim}; run `kioku reindex`"
    )
