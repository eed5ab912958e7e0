"""The embedding step: texts from the truth store in, vectors into the truth store.

A note (or record) needs a vector when the truth store has none for the configured
model and the exact text it now has, or when the embedder makes latent terms and the
stored vector has none (written by an engine without them, or by an older kioku), or when
the stored vector is a draft.

A batch with ``embedder.draft_backlog`` or more texts that have no vector at all is a
burst's backlog: where the embedder makes drafts (the local engine's int8 graph, ~1.3x
the passages a second) those are embedded as drafts, so the burst becomes searchable
sooner, and stored as such; reconcile queues drafts again, and this step then embeds
them exactly (bench/LOG.md "Fresh notes"). Past ``embedder.draft_limit`` drafts waiting
(a bulk import, not a burst) a backlog is embedded exactly at once: a draft and its
redo cost ~1.4x the exact pass alone, so an import of thousands settles sooner, while
its first ``draft_limit`` notes still become searchable on the draft pass.

A stopping process (``JobContext.stopping``) starts no further chunk: what is left has
no vector in the truth store, and the next start's reconcile queues it again.

Edits during embedding are harmless: the vector is stored under the hash of the text
that was embedded, the owner applies only vectors whose hash matches the current text,
and the edit queued its own job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_gateway.indexing.indexer import note_document, record_document
from mcp_gateway.jobs.context import JobContext
from mcp_gateway.stores.vectors import content_hash


@dataclass(slots=True)
class EmbedStats:
    batches: int = 0
    embedder_calls: int = 0
    embedded: int = 0
    drafted: int = 0  # of those, on the draft pass (a backlog)


async def _embed_channels(kc: JobContext, kind: str, docs: dict[str, str]) -> None:
    """Each further dense channel's vectors the items lack, before the main model's:
    the channels are the fast ones (USE: ~10x e5's documents a second), so a backlog
    becomes searchable by meaning from them first. New notes mostly have them already
    (the owner embeds them with the first point, ``Indexer.put_new_lexical``)."""
    if not kc.channels:
        return
    hashes = {sid: content_hash(doc) for sid, doc in docs.items()}
    for ce in kc.channels:
        model = ce.embedder.model_id
        ids, size = list(docs), kc.settings.embedder.batch_size
        have = await kc.vectors.get(kind, model, ids)
        todo = [sid for sid in ids if sid not in have or have[sid].content_hash != hashes[sid]]
        for start in range(0, len(todo), size):
            if kc.stopping.is_set():
                return
            chunk = todo[start : start + size]
            vecs = await ce.embedder.embed_documents([docs[sid] for sid in chunk])
            rows = [(sid, hashes[sid], v) for sid, v in zip(chunk, vecs, strict=True)]
            await kc.vectors.put(kind, model, rows)
            kc.vectors_written()


async def _embed(kc: JobContext, kind: str, docs: dict[str, str], stats: EmbedStats) -> None:
    await _embed_channels(kc, kind, docs)
    model = kc.embedder.model_id
    hashes = {sid: content_hash(doc) for sid, doc in docs.items()}
    terms = kc.embedder.latent_terms
    backlog = kc.settings.embedder.draft_backlog
    limit = kc.settings.embedder.draft_limit
    ids, size = list(docs), kc.settings.embedder.batch_size
    for start in range(0, len(ids), size):
        if kc.stopping.is_set():
            return  # the rest stays without a vector: reconcile queues it at the next start
        # read for each chunk, not once: while a long backlog is embedded, searches and
        # the owner's prefetch store vectors for some of its notes (fresh.py, prefetch.py)
        chunk = ids[start : start + size]
        have = await kc.vectors.get(kind, model, chunk)
        new = [sid for sid in chunk if sid not in have or have[sid].content_hash != hashes[sid]]
        known = set(chunk) - set(new)
        again = [
            sid
            for sid in chunk
            if sid in known and (have[sid].draft or (terms and have[sid].terms is None))
        ]
        draft = kc.embedder.makes_drafts and 0 < backlog <= len(new)
        if draft and limit:  # a bulk import past the limit: each note once, exactly
            draft = await kc.vectors.draft_count(model, limit) < limit
        for todo, as_draft in ((new, draft), (again, False)):
            if not todo:
                continue
            texts = [docs[sid] for sid in todo]
            encode = kc.embedder.encode_documents
            encoded = await (encode(texts, draft=True) if as_draft else encode(texts))
            stats.embedder_calls += 1
            rows = [
                (sid, hashes[sid], e.dense, e.terms) for sid, e in zip(todo, encoded, strict=True)
            ]
            await kc.vectors.put(kind, model, rows, draft=as_draft)
            stats.embedded += len(todo)
            stats.drafted += len(todo) if as_draft else 0
            kc.vectors_written()


async def embed_notes(kc: JobContext, note_ids: Sequence[str], stats: EmbedStats) -> None:
    """Store vectors for the live notes among ``note_ids`` that lack a current one."""
    found = await kc.notes.get_many(list(dict.fromkeys(note_ids)))
    await _embed(kc, "note", {n.id: note_document(n) for n in found.values()}, stats)


async def embed_records(kc: JobContext, record_ids: Sequence[str], stats: EmbedStats) -> None:
    found = await kc.records.get_many(list(dict.fromkeys(record_ids)))
    await _embed(kc, "record", {r.id: record_document(r) for r in found.values()}, stats)
