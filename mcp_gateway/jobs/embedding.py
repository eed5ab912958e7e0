"""The embedding step: texts from the truth store in, vectors into the truth store.

A note (or record) needs a vector when the truth store has none for the configured
model and the exact text it now has, or when the embedder makes latent terms and the
stored vector has none (written by an engine without them, or by an older kioku), or when
the stored vector is a draft.

A batch with ``embedder.draft_backlog`` or more texts that have no vector at all is a
burst's backlog: where the embedder makes drafts (the local engine's int8 graph, ~1.3x
the passages a second) those are embedded as drafts, so the burst becomes searchable
sooner, and stored as such; reconcile queues drafts again, and this step then embeds
them exactly (bench/LOG.md "Fresh notes"); the drafts are stored a few at a time as the
lanes finish them (``_drafts``). Past ``embedder.draft_limit`` drafts waiting
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

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_gateway.common.types import Note
from mcp_gateway.indexing.points import note_document, record_document
from mcp_gateway.queue.context import JobContext
from mcp_gateway.stores.vectors import content_hash

# a backlog's drafts stored this many at a time (``_drafts``): a note of a 32-text chunk
# waited for all 32 (~0.3 s on two idle cores, seconds on busy ones) before any was stored
DRAFTS_STORED_TOGETHER = 4


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
        stats.embedder_calls += bool(new) + bool(again)  # passes, however they are cut
        if new and draft:  # each few drafts stored as soon as they are done
            await _drafts(kc, kind, {sid: docs[sid] for sid in new}, hashes, stats)
        elif new:
            await _store(kc, kind, new, docs, hashes, stats)
        if again:
            await _store(kc, kind, again, docs, hashes, stats)


async def _store(
    kc: JobContext,
    kind: str,
    todo: list[str],
    docs: dict[str, str],
    hashes: dict[str, str],
    stats: EmbedStats,
    *,
    draft: bool = False,
) -> dict[str, Sequence[float]]:
    """Embed ``todo`` in one embedder call (the draft pass or the exact one) and store it;
    the dense vectors by id."""
    texts = [docs[sid] for sid in todo]
    encode = kc.embedder.encode_documents
    encoded = await (encode(texts, draft=True) if draft else encode(texts))
    rows = [(sid, hashes[sid], e.dense, e.terms) for sid, e in zip(todo, encoded, strict=True)]
    await kc.vectors.put(kind, kc.embedder.model_id, rows, draft=draft)
    stats.embedded += len(todo)
    stats.drafted += len(todo) if draft else 0
    kc.vectors_written()
    return {sid: e.dense for sid, e in zip(todo, encoded, strict=True)}


async def embed_now(kc: JobContext, notes: Sequence[Note]) -> dict[str, Sequence[float]]:
    """The exact dense vectors of ``notes``, embedded now and stored as this step stores
    them (latent terms too), so the job does not embed them again: what the session
    context's fold needs before the job has run (it used to embed them and throw the
    vectors away: ~5 % of a burst's embedding, bench/LOG.md "burst over MCP")."""
    docs = {n.id: note_document(n) for n in notes}
    hashes = {sid: content_hash(doc) for sid, doc in docs.items()}
    return await _store(kc, "note", list(docs), docs, hashes, EmbedStats())


async def _drafts(
    kc: JobContext, kind: str, docs: dict[str, str], hashes: dict[str, str], stats: EmbedStats
) -> None:
    """A backlog's drafts, stored ``DRAFTS_STORED_TOGETHER`` at a time as they are done
    instead of once the whole chunk is: the calls are queued on the lanes at once, in
    order, and each lane takes the next text as it frees (so none waits at a call's
    end), and a note is searchable once its own few are embedded, not its chunk's 32
    (bench/LOG.md, "burst over MCP"). Every text is embedded alone either way, so its
    vector does not depend on how the chunk is cut. A failing call cancels the rest and
    its error is raised as it is (the batcher tells a transient one from a poison note)."""
    ids = list(docs)
    parts = [
        ids[i : i + DRAFTS_STORED_TOGETHER] for i in range(0, len(ids), DRAFTS_STORED_TOGETHER)
    ]
    calls = [
        asyncio.ensure_future(_store(kc, kind, part, docs, hashes, stats, draft=True))
        for part in parts
    ]
    try:
        await asyncio.gather(*calls)
    except BaseException:
        for call in calls:
            call.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        raise


async def embed_notes(kc: JobContext, note_ids: Sequence[str], stats: EmbedStats) -> None:
    """Store vectors for the live notes among ``note_ids`` that lack a current one."""
    found = await kc.notes.get_many(list(dict.fromkeys(note_ids)))
    await _embed(kc, "note", {n.id: note_document(n) for n in found.values()}, stats)


async def embed_records(kc: JobContext, record_ids: Sequence[str], stats: EmbedStats) -> None:
    found = await kc.records.get_many(list(dict.fromkeys(record_ids)))
    await _embed(kc, "record", {r.id: record_document(r) for r in found.values()}, stats)
