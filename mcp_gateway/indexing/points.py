"""What an index point holds for a note or a record: the text it is searched by, its
payload, and the vectors the truth store has for that text.

Pure functions but ``channel_rows`` (one read of the vector store); the writers
(``indexer``, ``applier``, ``rebuild.fill``) build their points here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_gateway.common.types import IndexPoint, Note, SparseVector, point_id
from mcp_gateway.embedders import static
from mcp_gateway.index.base import IndexSpec, visible_value
from mcp_gateway.indexing import lexical
from mcp_gateway.records.model import Record
from mcp_gateway.stores.vectors import StoredVector, VectorStore, content_hash


def note_payload(note: Note, prior: float | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "kind": "note",
        "source_id": note.id,
        "type": note.type,
        "domain": note.domain,
        "priority": note.priority,
        "namespace": note.namespace,
        "visible": visible_value(note.namespace),
        "created_at": note.created_at,
        # which text the point's sparse vector was built from: reconcile finds a point
        # an edit's index write never reached (the write is after the commit)
        "text_hash": content_hash(note_document(note)),
    }
    _add_script(payload, note_document(note))
    if prior is not None:
        payload["prior"] = prior
    return payload


def note_document(note: Note) -> str:
    # The solved query is indexed with the note: it is literally a query that should
    # find it again (the source design's dynamic-threshold idea, used for recall too).
    return f"{note.text}\n{note.solved_query}" if note.solved_query else note.text


def note_point(
    note: Note,
    dense: Sequence[float] | None = None,
    prior: float | None = None,
    latent: SparseVector | None = None,
    channels: dict[str, list[float]] | None = None,
    *,
    fast: bool = True,
) -> IndexPoint:
    """``fast`` False: no static vector now, even without ``dense`` (a new note's
    follows off the ack's path: ``Indexer.fill_fast``)."""
    # "dense" tells ranking that a missing dense score means "not embedded yet", not
    # "far away", so a fresh note competes on its lexical evidence alone (and on the
    # further channels it already has, ``channels``).
    payload = {**note_payload(note, prior), "dense": dense is not None}
    doc = note_document(note)
    return IndexPoint(
        id=point_id("note", note.id),
        payload=payload,
        sparse=lexical.sparse_document(doc),
        dense=list(dense) if dense is not None else None,
        latent=latent if dense is not None else None,
        channels=channels or {},
        # searchable by meaning until its dense vector lands (index.fast_pool)
        fast=static.vector(doc, yielding=True) if dense is None and fast else None,
    )


def record_point(
    rec: Record,
    *,
    current: bool,
    dense: Sequence[float] | None = None,
    latent: SparseVector | None = None,
    channels: dict[str, list[float]] | None = None,
) -> IndexPoint:
    doc = record_document(rec)
    return IndexPoint(
        id=point_id("record", rec.id),
        payload={**record_payload(rec, current), "dense": dense is not None},
        sparse=lexical.sparse_document(doc),
        dense=list(dense) if dense is not None else None,
        latent=latent if dense is not None else None,
        channels=channels or {},
        fast=static.vector(doc, yielding=True) if dense is None and current else None,
    )


ChannelRows = dict[str, dict[str, StoredVector]]  # source id -> channel name -> vector


async def channel_rows(
    vectors: VectorStore, spec: IndexSpec, kind: str, ids: Sequence[str]
) -> ChannelRows:
    """The truth store's vectors of ``ids`` for each further dense channel of ``spec``."""
    out: ChannelRows = {}
    for channel in spec.channels:
        for sid, row in (await vectors.get(kind, channel.model_id, ids)).items():
            out.setdefault(sid, {})[channel.name] = row
    return out


def current_vector(row: StoredVector | None, document: str) -> StoredVector | None:
    """``row`` if it was embedded from ``document`` as it reads now (else None: the text
    changed since, and the vector is not this text's)."""
    return row if row is not None and row.content_hash == content_hash(document) else None


def current_channels(rows: ChannelRows, sid: str, document: str) -> dict[str, list[float]]:
    """The channel vectors of ``sid`` embedded from ``document`` as it reads now."""
    found = rows.get(sid)
    if not found:
        return {}
    chash = content_hash(document)
    return {name: row.vector for name, row in found.items() if row.content_hash == chash}


def record_payload(rec: Record, current: bool) -> dict[str, Any]:
    # ``current`` lets every search drop superseded and duplicate records in the index.
    payload: dict[str, Any] = {
        "kind": "record",
        "source_id": rec.id,
        "type": rec.type,
        "domain": "",
        "priority": "",
        "namespace": rec.namespace,
        "visible": visible_value(rec.namespace, current),
        "created_at": rec.created_at,
        "current": current,
        "text_hash": content_hash(record_document(rec)),
    }
    _add_script(payload, record_document(rec))
    return payload


SCRIPT_SAMPLE = 2000  # characters read to tell a text's script


def _add_script(payload: dict[str, Any], text: str) -> None:
    """A text not in Latin script says so (``script``): a channel that reads only Latin
    script (MiniLM) abstains on it in the fusion (``ranking.fuse``)."""
    script = lexical.script_of(text[:SCRIPT_SAMPLE])
    if script != "latin":
        payload["script"] = script


def record_document(rec: Record) -> str:
    return f"{rec.id}\n{rec.title}\n{rec.content}"
