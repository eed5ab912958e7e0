"""Learned keys on the search path: a query close to a question a memory answered
finds that memory, in the namespace where it answered it.

``KeyMatcher.lift`` runs after the index call, in process: one matrix product of the
query's first view against the namespace's keys (``stores.learned_keys``; at most
``MAX_PER_NAMESPACE`` rows, ~0.5-1 ms at 2k on a busy core), and no index round trip:
a key lifts a memory the query's own channels found. A key at cosine
``c >= min_cosine`` to the query scores its memory as a dense hit of ``c - offset``
(less ``DECAY_PENALTY`` as the key ages unconfirmed): the memory's dense score is the
best of its own and its keys'.
Question-to-question cosines run higher than question-to-memory ones, hence the offset
(tuned on dev, ``make bench-learning``). A key asked in another script than the query
meets ``cross_cosine`` instead: e5's cross-language rewordings sit lower.

Keys are read only for the caller's own namespace (the first of the request's) and
lift only hits of the request's own channels (its namespaces, type, domain, current):
feedback in one namespace never moves another's answers, and a key never brings a
memory its caller may not read.

``search.recent_asks.RecentAsks`` remembers each namespace's last searches for
``used=[ids]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mcp_gateway.common.types import IndexHit, point_id
from mcp_gateway.indexing.lexical import script_of
from mcp_gateway.search.ranking import Candidate
from mcp_gateway.search.recent_asks import RecentAsks
from mcp_gateway.stores.learned_keys import EMPTY, KeyMatrix, LearnedKeyStore

# a key unconfirmed for this long has lost half its pull; DECAY_PENALTY is what a key
# loses in score as its weight goes from 1 to 0
KEY_HALF_LIFE_S = 90 * 86_400
DECAY_PENALTY = 0.1
# per memory, only its best key counts; at most this many memories a search lifts
MAX_LIFTED = 10
# questions whose script is remembered (cleared past 4x: a namespace holds at most 2,000)
MAX_SCRIPTS = 2_000


class KeyMatcher:
    def __init__(
        self,
        store: LearnedKeyStore,
        model_id: str,
        *,
        min_cosine: float,
        offset: float,
        cross_cosine: float | None = None,
        clock: Callable[[], float] = time.time,
        asks: RecentAsks | None = None,
    ) -> None:
        self.store, self.model_id = store, model_id
        self.min_cosine, self.offset, self.clock = min_cosine, offset, clock
        # a key asked in another script than the query (a Japanese rewording of an
        # English question) sits lower in e5's cosines than a same-language rewording
        self.cross_cosine = min_cosine if cross_cosine is None else cross_cosine
        self.asks = asks or RecentAsks()
        self._cache: dict[str, tuple[int, KeyMatrix]] = {}
        self._scripts: dict[str, tuple[int, np.ndarray]] = {}
        self._script_of: dict[str, str] = {}  # question -> its script, computed once

    @property
    def version(self) -> int:
        """Part of the answer cache's key: a new key makes earlier answers stale."""
        return self.store.version

    async def _keys(self, namespace: str) -> KeyMatrix:
        known = self._cache.get(namespace)
        if known is not None and known[0] == self.store.version:
            return known[1]
        version = self.store.version
        keys = await self.store.matrix(namespace, self.model_id)
        self._cache[namespace] = (version, keys)
        return keys

    def _script(self, text: str) -> str:
        known = self._script_of.get(text)
        if known is None:
            if len(self._script_of) > 4 * MAX_SCRIPTS:
                self._script_of.clear()
            known = self._script_of[text] = script_of(text)
        return known

    def _bars(self, namespace: str, keys: KeyMatrix, query: str | None) -> np.ndarray | float:
        """Each key's bar: ``min_cosine``, or ``cross_cosine`` where the key's question
        is written in another script than ``query`` (None: every key the same)."""
        if query is None or self.cross_cosine == self.min_cosine:
            return self.min_cosine
        known = self._scripts.get(namespace)
        if known is None or known[0] != self.store.version or len(known[1]) != len(keys.questions):
            known = (self.store.version, np.array([self._script(q) for q in keys.questions]))
            self._scripts[namespace] = known
        return np.where(known[1] == script_of(query), self.min_cosine, self.cross_cosine)

    async def matches(
        self, namespace: str, view: Sequence[float], query: str | None = None
    ) -> dict[str, float]:
        """Memory id -> its best key's score (as a dense cosine) for this query view
        (``query``: its text, whose script picks each key's bar)."""
        keys = await self._keys(namespace)
        if keys is EMPTY or not keys.note_ids or keys.vectors.shape[1] != len(view):
            return {}
        q = np.asarray(view, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        # einsum, not ``@``: a matrix-vector product through BLAS starts its thread
        # pool, which on a busy machine cost ~4-25 ms a search instead of ~0.8 at 2k keys
        cos = np.einsum("ij,j->i", keys.vectors, q)
        bars = self._bars(namespace, keys, query)
        near = np.nonzero(cos >= bars)[0]
        if near.size == 0:
            return {}
        age = np.maximum(self.clock() - keys.used_at[near], 0.0)
        weight = 0.5 ** (age / KEY_HALF_LIFE_S)
        # a key over a lower (cross-script) bar scores as one the same distance over
        # the main bar: the bar, not the raw cosine, says how close a rewording is
        lifted_by = self.min_cosine - (bars[near] if isinstance(bars, np.ndarray) else bars)
        scores = cos[near] + lifted_by - self.offset - DECAY_PENALTY * (1.0 - weight)
        best: dict[str, float] = {}
        for i, score in zip(near.tolist(), scores.tolist(), strict=True):
            nid = keys.note_ids[i]
            if score > best.get(nid, -2.0):
                best[nid] = float(score)
        top = sorted(best.items(), key=lambda kv: -kv[1])[:MAX_LIFTED]
        return dict(top)

    async def rivals(
        self, namespace: str, view: Sequence[float], answered_by: Iterable[str]
    ) -> list[tuple[str, str]]:
        """(memory id, question) of the keys of ``namespace`` that match ``view`` but
        lead to a memory other than ``answered_by``: the need was answered by those,
        so these keys point the wrong way (a wrong pick earlier, or a stale answer)."""
        keys = await self._keys(namespace)
        if not keys.note_ids or keys.vectors.shape[1] != len(view):
            return []
        q = np.asarray(view, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        near = np.nonzero(np.einsum("ij,j->i", keys.vectors, q) >= self.min_cosine)[0].tolist()
        keep = set(answered_by)
        return [(keys.note_ids[i], keys.questions[i]) for i in near if keys.note_ids[i] not in keep]

    async def lift(
        self,
        namespace: str,
        view: Sequence[float] | None,
        dense: list[IndexHit],
        others: Sequence[Sequence[IndexHit]],
        query: str | None = None,
    ) -> Lifted:
        """``dense`` with each memory a key matched scored at least its key's score; a
        memory only the other channels (``others``: lexical, latent terms) found joins
        the dense hits. The channels applied the request's filter: a key never brings
        a memory the request may not see."""
        if view is None:
            return Lifted(dense)
        found = {
            point_id("note", nid): s
            for nid, s in (await self.matches(namespace, view, query)).items()
        }
        if not found:
            return Lifted(dense)
        out = list(dense)
        at = {h.id: i for i, h in enumerate(out)}
        missing: dict[str, float] = {}
        for nid, score in found.items():
            i = at.get(nid)
            if i is not None:
                if out[i].score < score:
                    out[i] = IndexHit(nid, score, out[i].payload)
            else:
                missing[nid] = score
        # a key lifts a memory the query's own channels found; it never brings one in
        # (measured no better, and it would cost a read of the index on the search path)
        if missing:
            for hits in others:
                for h in hits:
                    if h.id in missing:
                        out.append(IndexHit(h.id, missing.pop(h.id), h.payload))
        out.sort(key=lambda h: -h.score)
        lifted = {h.id for h in out if h.id in found and h.score == found[h.id]}
        best = max((h.score for h in dense), default=None)
        return Lifted(out, lifted, None if best is None else 1.0 - best)


@dataclass(frozen=True, slots=True)
class Lifted:
    """The dense hits with the keys' lifts; which points a key lifted; the query's own
    best dense distance before any lift."""

    dense: list[IndexHit]
    lifted: frozenset[str] | set[str] = frozenset()
    own_best: float | None = None

    def keep_reference(self, candidates: Sequence[Candidate]) -> None:
        """A lifted memory ranks by its key, but the keep rule stays measured from the
        query's own best distance: a lifted hit never sets the bar that drops the
        memories the query itself found (its distance reads no closer than that)."""
        if not self.lifted or self.own_best is None:
            return
        for cand in candidates:
            if cand.point_id in self.lifted and cand.distance is not None:
                cand.distance = max(cand.distance, self.own_best)
