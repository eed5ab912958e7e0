"""A static sentence vector: a table row per token, averaged; no model to run.

WordLlama's ``l2_supercat`` 256-d table (PyPI ``wordllama``: Llama-2's 32k-token
vocabulary, rows trained for sentence similarity) gives a text a vector in ~0.1 ms,
some 200x cheaper than an e5 pass. It is much weaker than e5 (bench/LOG.md, "fast first
vector"), so it serves only as the first semantic vector of a note the model has not
read yet (``index.fast_pool``).

The math is owned here (tokenize without special tokens, look the rows up, average,
L2-normalise: what ``WordLlamaInference.embed(norm=True)`` computes); the package's
files are found through ``common.compat.wordllama_files``. The 16 MB float16 table is
mapped, not read: only the pages of the tokens a process has met are resident.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
from pathlib import Path

import numpy as np

from mcp_gateway.common.compat import wordllama_files

log = logging.getLogger(__name__)

MODEL_ID = "wordllama-l2-supercat-256"
TENSOR = "embedding.weight"
DIM = 256
MAX_TOKENS = 512  # a note's opening is its topic; a long note's tail adds little to a mean


def _mapped_table(path: Path) -> np.ndarray:
    """The embedding tensor of a safetensors file, memory-mapped (read-only)."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    entry = header[TENSOR]
    dtypes = {"F16": np.float16, "F32": np.float32}
    start, end = entry["data_offsets"]
    rows, dim = entry["shape"]
    table = np.memmap(
        path, dtype=dtypes[entry["dtype"]], mode="r", offset=8 + size + start, shape=(rows, dim)
    )
    if table.nbytes != end - start:
        raise ValueError(f"{path}: {TENSOR} holds {end - start} bytes, not {table.nbytes}")
    return table


class StaticEmbedder:
    """``encode(texts)`` -> unit vectors (float32, one row per text; a text with no
    token gives a zero row)."""

    model_id = MODEL_ID

    def __init__(self, weights: Path, tokenizer: Path) -> None:
        from tokenizers import Tokenizer

        self.table = _mapped_table(weights)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.dim = int(self.table.shape[1])

    @classmethod
    def packaged(cls) -> StaticEmbedder:
        """The table and tokenizer ``wordllama`` ships (FileNotFoundError without it)."""
        return cls(*wordllama_files())

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = self.table.shape[0]
        for i, enc in enumerate(self.tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = np.asarray(enc.ids[:MAX_TOKENS], dtype=np.int64)
            ids = ids[ids < rows]
            if not len(ids):
                continue
            vec = self.table[ids].astype(np.float32).mean(axis=0)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[i] = vec / norm
        return out


_shared: StaticEmbedder | None = None
_enabled = False
_lock = threading.Lock()


def enable(on: bool) -> None:
    """Whether points written without a dense vector get a static one (``vector``):
    set by the app at open from ``search.fast_first``; one setting per process."""
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled


def shared() -> StaticEmbedder:
    """One embedder per process (the table is mapped once), loaded on first use."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = StaticEmbedder.packaged()
        return _shared


def release() -> bool:
    """Let the loaded embedder go (its tokenizer and mapping are freed with it); the next
    ``vector`` loads it again. Returns whether one was loaded."""
    global _shared
    with _lock:
        loaded, _shared = _shared is not None, None
    if loaded:  # the tokenizer's heap back to the system (measured: ~20 of ~25 MB)
        from mcp_gateway.common.heap import trim_heap

        trim_heap()
    return loaded


def vector(text: str) -> list[float] | None:
    """The static vector of a text the model has not read yet, None when fast vectors
    are off, unavailable or the text has no token. ~0.1 ms: runs where its point is
    built (off the event loop)."""
    if not _enabled:
        return None
    try:
        vec = shared().encode([text])[0]
    except (OSError, ValueError, KeyError, ImportError) as exc:  # not installed, bad file
        log.warning("fast first vectors off: %s", exc)
        enable(False)
        return None
    return vec.tolist() if vec.any() else None
