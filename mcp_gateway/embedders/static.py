"""A static sentence vector from e5's own table: a row per vocabulary piece, averaged.

The table is distilled from the bundled multilingual-e5-small (``static_build``, the
Model2Vec method): each kept piece of e5's 250k-piece vocabulary was run through the
exact e5 graph alone (``<s> passage: piece </s>``), the piece's own output state
projected by PCA, weighted by how rare the piece is (SIF: ``a / (a + p)``); then the
rows of the pieces a corpus holds were trained so that a text's vector follows e5's
vector of that text (``static_train``, Model2Vec's tokenlearn); stored as int8 with a
per-row scale. A text's vector is the weighted mean of its pieces' rows, L2-normalised:
~0.1-1 ms, no model run, and it reads every script e5's tokenizer reads that the table
keeps (Latin, Japanese, Thai, digits, symbols). Alone it is about half of e5
(bench/LOG.md, "fast first: a trained table"), so it serves only as the first semantic
vector of a note the model has not read yet (``index.fast_pool``).

The rows (``static_e5.npy``, package data) are memory-mapped, not read: only the pages
of the pieces a process has met are resident. The text is tokenized by the in-house e5
tokenizer (``e5_tokenizer``) over the installed model's vocabulary, so the pieces are
e5's own: the very tokenizer the e5 engine holds where it is loaded
(``e5_tokenizer.shared``), so a note's words, tokenized here at its ack, are cached for
its e5 job, and the piece table is not held twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp_gateway.common import serving
from mcp_gateway.embedders import e5_tokenizer
from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
ROWS_FILE = HERE / "static_e5.npy"  # int8 [pieces, dim], memory-mapped
META_FILE = HERE / "static_e5.npz"  # ids, scales and how the table was built
MODEL_ID = "e5-small-static"
# a note's opening is its topic; a long note's tail adds little to a mean, and the
# tokenizer's cost grows with the text
MAX_CHARS = 4000
MAX_TOKENS = 512


class StaticEmbedder:
    """``encode(texts)`` -> unit vectors (float32, one row per text; a text with no
    piece in the table gives a zero row)."""

    model_id = MODEL_ID

    def __init__(
        self, rows: np.ndarray, ids: np.ndarray, scales: np.ndarray, tokenizer: UnigramTokenizer
    ) -> None:
        """``rows`` [n, dim] (int8 or float), ``ids`` the sorted piece id of each row,
        ``scales`` each row's factor (its quantisation scale times its weight)."""
        self.rows, self.ids, self.scales = rows, ids, scales
        self.tokenizer = tokenizer
        self.dim = int(rows.shape[1])

    @classmethod
    def packaged(cls, rows_file: Path = ROWS_FILE, meta_file: Path = META_FILE) -> StaticEmbedder:
        """The shipped table (or another in its format, over the same pieces) over the
        installed e5 model's vocabulary (FileNotFoundError or ImportError without them)."""
        from mcp_gateway.embedders.e5_onnx import model_path
        from mcp_gateway.graphs import e5_file

        meta = np.load(meta_file)
        rows = np.load(rows_file, mmap_mode="r")
        path = model_path(str(meta["variant"]))
        # the e5 engine's own tokenizer where the engine is loaded (e5_tokenizer.shared)
        tokenizer = e5_tokenizer.shared(path, lambda: e5_file.load(path).vocab)
        return cls(rows, meta["ids"], meta["scales"], tokenizer)

    def pieces(self, text: str, pause: Callable[[], None] | None = None) -> np.ndarray:
        """Row indices of the text's pieces that the table holds (in text order);
        ``pause`` as ``UnigramTokenizer.encode`` takes it."""
        ids = np.asarray(self.tokenizer.encode(text[:MAX_CHARS], pause)[:MAX_TOKENS], np.int64)
        where = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        out: np.ndarray = where[self.ids[where] == ids]
        return out

    def encode(self, texts: list[str], pause: Callable[[], None] | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = self.pieces(text, pause)
            if not len(rows):
                continue
            vec = self.scales[rows] @ np.asarray(self.rows[rows], np.float32)
            norm = float(np.linalg.norm(vec))
            if norm > 0:
                out[i] = vec / norm
        return out


def dimension() -> int:
    """The shipped table's width (read from its header, nothing loaded)."""
    rows = np.load(ROWS_FILE, mmap_mode="r")
    return int(rows.shape[1])


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
    """Let the loaded embedder go (its mapping is freed with it, and its tokenizer unless
    the e5 engine holds it too); the next ``vector`` loads it again. Returns whether one
    was loaded."""
    global _shared
    with _lock:
        loaded, _shared = _shared is not None, None
    if loaded:  # the tokenizer's heap back to the system
        from mcp_gateway.common.heap import trim_heap

        trim_heap()
    return loaded


# the most a text's static vector waits for adds being served, from its note's ack
PAUSE_BUDGET_S = 0.05


def vector(text: str, yielding: bool = False, since: float | None = None) -> list[float] | None:
    """The static vector of a text the model has not read yet, None when fast vectors
    are off, unavailable or the text has no piece in the table. ~0.1-1 ms of CPU, off
    the event loop. ``yielding`` (a point's vector, computed after its note's ack): it
    gives way to adds being served (``common.serving``) for ``PAUSE_BUDGET_S`` from ``since``
    (monotonic; None: now)."""
    if not _enabled:
        return None
    if not yielding:
        return _vector(text, None)
    start = time.monotonic() if since is None else since
    return _vector(text, serving.requests.pauser(start + PAUSE_BUDGET_S))


def _vector(text: str, pause: Callable[[], None] | None) -> list[float] | None:
    try:
        vec = shared().encode([text], pause)[0]
    except (OSError, ValueError, KeyError, ImportError) as exc:  # no model, bad file
        log.warning("fast first vectors off: %s", exc)
        enable(False)
        return None
    return vec.tolist() if vec.any() else None
