"""Static tables as further dense channels: a text's vector is the weighted mean of its
e5 pieces' rows, no model run (``static.StaticEmbedder``).

Each table was trained (``static_train``, Model2Vec's tokenlearn) so that a text's
static vector follows one teacher's vector of that text: ``static_e5`` is the shipped
fast-first table (e5 the teacher), ``static_minilm`` and ``static_use`` the same recipe
with the ``minilm`` and ``use`` channels' models as teachers. A channel's vector costs
~0.1-1 ms a text on the e5 tokenizer the main model already holds, and its rows are
memory-mapped, so a note gets it with its first point (``channels.FAST``) and a query
pays no second model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_gateway.embedders.base import PinnedChannel
from mcp_gateway.embedders.static import HERE, META_FILE, ROWS_FILE, StaticEmbedder

DIM = 128
# channel name -> (model id stored with its vectors, rows file, meta file); a table
# retrained under the same name needs a new model id, or old vectors would be mixed in
TABLES: dict[str, tuple[str, Path, Path]] = {
    "static_e5": ("static/e5-small-tokenlearn-r22", ROWS_FILE, META_FILE),
    "static_minilm": (
        "static/minilm-l6-tokenlearn-r23",
        HERE / "static_minilm.npy",
        HERE / "static_minilm.npz",
    ),
    "static_use": (
        "static/use-v3-tokenlearn-r23",
        HERE / "static_use.npy",
        HERE / "static_use.npz",
    ),
}


class StaticChannel(PinnedChannel):
    """``Embedder`` over one static table; ``start`` maps the rows and loads (or shares)
    the e5 tokenizer. Documents and queries are the same mean of rows (no prefix)."""

    dim = DIM
    STEP = 64  # a call of 64 texts is ~10-60 ms: a stop waits for no more than that

    def __init__(self, name: str, threads: int = 1) -> None:
        self.model_id, self._rows, self._meta = TABLES[name]
        self.label = name
        super().__init__(threads)

    def load(self, threads: int) -> Any:  # type: ignore[override]
        return StaticEmbedder.packaged(self._rows, self._meta)
