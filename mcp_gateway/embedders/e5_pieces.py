"""Which vocabulary pieces occur where in a text: the candidate edges of e5's Viterbi.

The unigram tokenizer (``e5_tokenizer``) needs, for each position of a word, every piece
that starts there. Looking up each substring (a ``hash`` of a new ``str`` and a bucket
probe, ~71 per new word) was most of a cold note's cost. ``PieceIndex`` finds them for
all of a text's new words at once, in numpy: a polynomial hash of every substring up to
the longest piece (16 characters) from the text's prefix sums, a bit array of the
pieces' hashes to drop most substrings that are no piece, a binary search of the rest
in the pieces' sorted hashes. A hash hit is an edge only when the piece's text equals
the substring (compared in Python for a few hits, as UTF-8 bytes in numpy for many), so
a collision costs a comparison, never a wrong id; of equal pieces the first id answers,
as the C engine's hash table does. Cold texts cost about half the lookups' time (a word
alone gains little: numpy's calls cost ~30 us a text) (bench/LOG.md, "e5's tokenizer on
cold words").

~5 MB at rest (the pieces' hashes 2 MB, their ids 1 MB, the bits 1 MB, the byte offsets
1 MB; the blob is the vocabulary's); built from the blob in ~0.06-0.1 s of held GIL, which
an editor's first search after a cold start waited on, so the built arrays are kept in
the graph cache (``cached``, keyed like the graphs) and a later start reads them (~5 ms).
"""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np

from mcp_gateway.graphs import cache, e5_file
from mcp_gateway.graphs.e5_file import Vocabulary

_MOD = 1 << 64
_MUL = 0x9E3779B97F4A7C15  # odd, so invertible mod 2^64
_INV = pow(_MUL, -1, _MOD)
_BITS = 23  # 2^23 bits (1 MB) for 250k pieces: ~3 % of non-pieces pass to the lookup
_SHIFT = np.uint64(64 - _BITS)  # the top bits index it (the low bits mix least)
_POWERS = 4096  # powers of _MUL kept; a longer text computes its own
# below these sizes a numpy step costs more than it saves: every hash goes to the
# binary search (no bit filter); the hits are compared as strings in Python
_FILTER_FROM = 512
_BYTES_FROM = 160


def _powers(base: int, n: int) -> np.ndarray:
    """base^0 .. base^(n-1) mod 2^64 (uint64 products wrap)."""
    steps = np.full(n, base, dtype=np.uint64)
    steps[0] = 1
    return np.cumprod(steps, dtype=np.uint64)


def _codepoints(text: str) -> np.ndarray:
    """``text``'s codepoints (uint32; a lone surrogate is kept: it matches no piece)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def hash_of(piece: str) -> int:
    """The hash ``PieceIndex`` gives ``piece`` (for lookups of one and for tests)."""
    return sum((ord(c) + 1) * _MUL**j for j, c in enumerate(piece)) % _MOD


class PieceIndex:
    """The pieces of a vocabulary by hash, less "" and the unknown piece's text (never
    matched: unknowns cost more), unless a piece equal to it comes first (the C
    engine's table then answers that one).

    A substring's hash is ``sum((c_j + 1) * M^j)`` mod 2^64 over its codepoints, which
    prefix sums give for every substring of a text at once:
    ``(S[i + l] - S[i]) * M^-i`` where ``S[k] = sum_{j<k} (c_j + 1) * M^j``."""

    def __init__(self, vocab: Vocabulary, built: dict[str, np.ndarray] | None = None) -> None:
        """``built``: the arrays ``arrays()`` gave for this vocabulary (``cached``)."""
        self._blob = np.frombuffer(vocab.blob, dtype=np.uint8)  # a view: no copy
        self._offsets = vocab.offsets
        self._bytes, self._at = vocab.blob, array("I", vocab.offsets.astype(np.uint32).tobytes())
        self._mul = _powers(_MUL, _POWERS)
        self._inv = _powers(_INV, _POWERS)
        if built is None:
            self._build(vocab)
        else:
            self._hashes, self._ids, self._bits = built["hashes"], built["ids"], built["bits"]
            self.longest = int(built["longest"])

    def arrays(self) -> dict[str, np.ndarray]:
        """What ``__init__`` builds from the vocabulary, for ``cached`` to keep."""
        return {
            "hashes": self._hashes,
            "ids": self._ids,
            "bits": self._bits,
            "longest": np.asarray(self.longest),
        }

    def _build(self, vocab: Vocabulary) -> None:
        text, starts = _decoded(vocab)
        lengths = np.diff(starts)
        keep = lengths > 0
        unk = _equal_to(text, starts, vocab.piece(vocab.unk))
        if int(np.argmax(unk)) == vocab.unk:
            keep &= ~unk
        self.longest = int(lengths.max(initial=0))
        raw = _codepoints(text)
        del text
        powers = _powers(_MUL, max(self.longest, 1))
        hashes = np.zeros(len(lengths), dtype=np.uint64)
        for depth in range(self.longest):
            longer = np.flatnonzero(lengths > depth)
            cps = raw[starts[longer] + depth].astype(np.uint64) + np.uint64(1)
            hashes[longer] += cps * powers[depth]
        ids = np.flatnonzero(keep)
        order = np.lexsort((ids, hashes[ids]))  # by hash, then id: equal pieces' first first
        self._hashes = hashes[ids][order]
        self._ids = ids[order].astype(np.int32)
        self._bits = np.zeros(1 << (_BITS - 3), dtype=np.uint8)
        top = self._hashes >> _SHIFT
        np.bitwise_or.at(
            self._bits, top >> np.uint64(3), np.left_shift(1, top & 7).astype(np.uint8)
        )

    def piece(self, i: int) -> str:
        return self._bytes[self._at[i] : self._at[i + 1]].decode("utf-8", "replace")

    def get(self, piece: str) -> int | None:
        """``piece``'s id (the first of equal pieces), None when it is not one."""
        if not piece or len(piece) > self.longest:
            return None
        h = hash_of(piece)
        return self._first(piece, int(np.searchsorted(self._hashes, np.uint64(h))), h)

    def _first(self, piece: str, k: int, h: int) -> int | None:
        hashes = self._hashes
        while k < len(hashes) and int(hashes[k]) == h:
            i = int(self._ids[k])
            if self.piece(i) == piece:
                return i
            k += 1
        return None

    def edges(self, text: str, ends: np.ndarray) -> tuple[list[int], list[int], list[int]]:
        """Every piece occurring in ``text`` within its runs: (starts, lengths, ids),
        by start then length. ``ends``: int64, per position, the end of its run (no
        piece crosses one)."""
        raw = _codepoints(text)
        n = len(raw)
        cps = raw.astype(np.uint64) + np.uint64(1)
        mul, inv = (
            (self._mul[:n], self._inv[:n]) if n <= _POWERS else (_powers(_MUL, n), _powers(_INV, n))
        )
        sums = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(cps * mul, out=sums[1:])
        room = np.minimum(ends - np.arange(n), self.longest)
        at, width = np.nonzero(np.arange(1, self.longest + 1) <= room[:, None])
        width += 1  # by start, then width: the order the Viterbi tries them in
        h = (sums[at + width] - sums[at]) * inv[at]
        if len(h) > _FILTER_FROM:
            top = h >> _SHIFT
            maybe = (self._bits[top >> np.uint64(3)] >> (top & np.uint64(7)).astype(np.uint8)) & 1
            cand = np.flatnonzero(maybe)
            at, width, h = at[cand], width[cand], h[cand]
        k = np.searchsorted(self._hashes, h)
        hit = np.flatnonzero(self._hashes[np.minimum(k, len(self._hashes) - 1)] == h)
        at, width, h, k = at[hit], width[hit], h[hit], k[hit]
        ids = self._ids[k]
        if len(ids) > _BYTES_FROM:
            same = self._same_bytes(text, raw, at, width, ids).tolist()
        starts, widths, out = at.tolist(), width.tolist(), ids.tolist()
        if len(ids) <= _BYTES_FROM:
            blob, offsets = self._bytes, self._at
            same = [
                blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") == text[a : a + w]
                for a, w, i in zip(starts, widths, out, strict=True)
            ]
        if all(same):
            return starts, widths, out
        for j in [j for j, ok in enumerate(same) if not ok]:  # a collision: the next equal hash
            a, w = starts[j], widths[j]
            found = self._first(text[a : a + w], int(k[j]) + 1, int(h[j]))
            out[j] = -1 if found is None else found
        keep = [j for j, i in enumerate(out) if i >= 0]
        return [starts[j] for j in keep], [widths[j] for j in keep], [out[j] for j in keep]

    def _same_bytes(
        self, text: str, raw: np.ndarray, at: np.ndarray, width: np.ndarray, ids: np.ndarray
    ) -> np.ndarray:
        """Whether each substring's UTF-8 bytes are its piece's (bool per edge)."""
        nbytes = 1 + (raw >= 0x80).astype(np.int64) + (raw >= 0x800) + (raw >= 0x10000)
        byte_at = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum(nbytes, out=byte_at[1:])
        src, size = byte_at[at], byte_at[at + width] - byte_at[at]
        dst = self._offsets[ids].astype(np.int64)
        same = size == self._offsets[ids + 1].astype(np.int64) - dst
        if not same.any():
            return same
        check = np.flatnonzero(same)
        reach = np.arange(int(size[check].max()))
        over = reach >= size[check][:, None]  # past the piece's end: not compared
        data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        mine = np.take(data, src[check][:, None] + reach, mode="clip")
        theirs = np.take(self._blob, dst[check][:, None] + reach, mode="clip")
        same[check] = ((mine == theirs) | over).all(axis=1)
        return same


def _decoded(vocab: Vocabulary) -> tuple[str, np.ndarray]:
    """Every piece decoded, concatenated, and each piece's start in it (+ the end), as
    ``vocab.piece`` decodes each: the blob at once where every piece starts on a
    character (no piece is then cut mid-character), else piece by piece."""
    offsets = vocab.offsets.astype(np.int64)
    raw = np.frombuffer(vocab.blob, dtype=np.uint8)
    inner = (raw & 0xC0) == 0x80  # a byte inside a character
    try:
        text = vocab.blob.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not inner[offsets[offsets < len(raw)]].any():
        nbytes = np.diff(offsets)
        # per piece, its bytes less those inside a character (reduceat: one segment
        # per piece; an empty piece's sum is its neighbour's byte, so it is masked)
        inner = inner[: offsets[-1]]
        within = np.add.reduceat(inner, np.minimum(offsets[:-1], len(inner) - 1), dtype=np.int64)
        chars = nbytes - np.where(nbytes > 0, within, 0)
        return text, np.concatenate(([0], np.cumsum(chars)))
    pieces = vocab.pieces
    lengths = np.fromiter((len(p) for p in pieces), np.int64, count=len(pieces))
    return "".join(pieces), np.concatenate(([0], np.cumsum(lengths)))


def _equal_to(text: str, starts: np.ndarray, piece: str) -> np.ndarray:
    """Which pieces' text is ``piece`` (bool per piece)."""
    same = np.diff(starts) == len(piece)
    for i in np.flatnonzero(same).tolist():
        same[i] = text[starts[i] : starts[i + 1]] == piece
    return same


def cached(vocab: Vocabulary, model: Path) -> PieceIndex:
    """The piece index of ``model``'s vocabulary, read from the graph cache, or built and
    kept there. Keyed by the model file (path, size, modification time) and the source
    of this module and of the vocabulary's reader, so another model, hashing or reading
    never reads these arrays; a file that does not read back whole (names, shapes,
    dtypes, ids within the vocabulary) is built again."""
    sources = [Path(__file__), Path(e5_file.__file__)]
    kept = cache.cached_arrays("pieces", [model], sources)
    if kept is not None:
        try:
            index: PieceIndex | None = PieceIndex(vocab, kept)
        except (KeyError, TypeError, ValueError):
            index = None
        if index is not None and _whole(index, len(vocab)):
            return index
    index = PieceIndex(vocab)
    cache.keep_arrays("pieces", [model], sources, index.arrays())
    return index


def _whole(index: PieceIndex, pieces: int) -> bool:
    hashes, ids, bits = index._hashes, index._ids, index._bits
    return (
        hashes.dtype == np.uint64
        and ids.dtype == np.int32
        and bits.dtype == np.uint8
        and hashes.shape == ids.shape
        and bits.shape == (1 << (_BITS - 3),)
        and 0 < len(ids) <= pieces
        and 0 <= int(ids.min())
        and int(ids.max()) < pieces
        and 0 < index.longest
    )
