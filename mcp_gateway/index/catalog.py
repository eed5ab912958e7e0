"""Which collection is live, for which model, and how to open one.

The live collection's name and model are kept in the SQLite ``meta`` table, so they
change in the same place as the truth: a rebuild writes a new collection beside the
live one and adopts it (name and model together) only once it is complete.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcp_gateway.common.diskguard import space_guard
from mcp_gateway.common.errors import IndexMismatch, StoreUnavailable
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.index.base import Index, IndexSpec
from mcp_gateway.stores.db import Database

ACTIVE_KEY = "index.active"
MODEL_KEY = "index.model"
SCHEMA_KEY = "index.schema"
APPLIED_KEY = "index.applied_seq"
PRIORS_KEY = "index.priors_at"


def applied_key(channel: str | None = None) -> str:
    """The applier's cursor (a vector seq) for the main model, or for a further dense
    channel: the seq is one counter over every model, so one adoption sets them all."""
    return APPLIED_KEY if channel is None else f"{APPLIED_KEY}.{channel}"


# Bump when the payload layout changes in a way old points cannot serve (2: "visible").
SCHEMA = "2"


@dataclass(frozen=True, slots=True)
class LiveIndexInfo:
    """What the meta table says about the live collection (None fields: never built)."""

    collection: str
    model_id: str | None
    dim: int | None
    schema: str | None


async def live_info(db: Database, settings: KiokuSettings) -> LiveIndexInfo:
    name = await db.get_meta(ACTIVE_KEY) or settings.index.collection
    model, _, dim = (await db.get_meta(MODEL_KEY) or "").rpartition("@")
    return LiveIndexInfo(
        collection=name,
        model_id=model or None,
        dim=int(dim) if dim.isdigit() else None,
        schema=await db.get_meta(SCHEMA_KEY),
    )


def check_schema(info: LiveIndexInfo) -> None:
    if info.model_id is not None and info.schema != SCHEMA:
        raise IndexMismatch(
            "the index was built by an older kioku with another layout: "
            "run `kioku reindex` to rebuild it from SQLite (nothing is lost)"
        )


async def adopt(
    db: Database,
    spec: IndexSpec,
    *,
    applied_seq: int,
    suffix: str = "",
    cursors_only: bool = False,
    priors_at: float = 0.0,
) -> None:
    """Make ``spec`` the live collection, in one transaction. ``suffix``: the adopting
    gateway's own cursors where several share the truth store (``indexing.applier``).
    ``cursors_only``: another gateway adopted ``spec`` already; this one built its own
    copy and sets only its cursors (never the deployment's choice back). ``priors_at``:
    the newest prior the collection was filled with (later ones are applied again)."""
    values = {
        APPLIED_KEY + suffix: str(applied_seq),
        PRIORS_KEY + suffix: repr(float(priors_at)),
        **{applied_key(c.name) + suffix: str(applied_seq) for c in spec.channels},
    }
    if not cursors_only:
        values |= {
            ACTIVE_KEY: spec.collection,
            MODEL_KEY: f"{spec.model_id}@{spec.dim}",
            SCHEMA_KEY: SCHEMA,
        }
    await db.transaction(
        lambda c: c.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )
    )


QDRANT_INSTALL_HINT = (
    "a Qdrant server (qdrant_url / index.backend = 'qdrant') needs qdrant-client: "
    "pip install 'kioku[qdrant]', or unset KIOKU_QDRANT_URL for the embedded index"
)


def next_collection(base: str, live: str) -> str:
    """``kioku`` -> ``kioku-2`` -> ``kioku-3``: a fresh name beside the live one."""
    match = re.fullmatch(rf"{re.escape(base)}-(\d+)", live)
    return f"{base}-{int(match.group(1)) + 1 if match else 2}"


async def open_index(settings: KiokuSettings, spec: IndexSpec) -> Index:
    if settings.index.backend == "edge" and not settings.qdrant_url:
        from mcp_gateway.index.edge import EdgeIndex

        index: Index = EdgeIndex(
            spec,
            edge_root(settings),
            settings.index.exact_search_below,
            hnsw_ef=settings.index.hnsw_ef,
            dense_storage=settings.index.dense_storage,
            payload_cache_size=settings.index.payload_cache_size,
            seal_every=0 if settings.shared_store else settings.index.seal_every,
            # mmapped writes die of SIGBUS on a full disk: refuse them before (diskguard)
            write_guard=space_guard(settings.index_path, settings.index.reserve_free_mb << 20),
        )
        await index.open()
        return index
    try:
        from mcp_gateway.index.qdrant import ServerLayout, open_qdrant_index
    except ImportError as exc:  # qdrant-client is the `qdrant` extra, not the default
        raise StoreUnavailable(QDRANT_INSTALL_HINT) from exc

    key = settings.index.qdrant_api_key
    return await open_qdrant_index(
        spec,
        url=settings.qdrant_url,
        # local mode allows one client per folder: one folder per collection
        path=None
        if settings.qdrant_url
        else settings.index_path / "qdrant-local" / spec.collection,
        api_key=key.get_secret_value() if key else None,
        layout=ServerLayout(
            shards=settings.index.qdrant_shards,
            replicas=settings.index.qdrant_replicas,
            write_consistency=settings.index.qdrant_write_consistency,
            on_disk=settings.index.qdrant_on_disk,
        ),
    )


def edge_root(settings: KiokuSettings) -> Path:
    return settings.index_path / "edge"


def remove_leftovers(settings: KiokuSettings, keep: str) -> list[str]:
    """Delete embedded collections other than the live one (an interrupted rebuild's);
    only the owner calls this, so none of them is in use."""
    removed = []
    for root in (edge_root(settings), settings.index_path / "qdrant-local"):
        if not root.is_dir():
            continue
        for path in root.iterdir():
            if path.is_dir() and path.name != keep:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path.name)
    return removed
