"""A static table as a further dense channel: a text's vector is the weighted mean of its
e5 pieces' rows, no model run (``static.StaticEmbedder``).

``static_use``: the table trained (``static_train``, Model2Vec's tokenlearn; the recipe
and corpus of the fast-first table, ``bench/static_train.py --teacher use``) so that a
text's static vector follows the ``use`` channel's model (multilingual USE v3) instead
of e5: it carries most of USE's cross-language signal (an English query near its Japanese
or Thai answer) without USE. Beside the ``minilm`` channel it ranks as ``use`` does
there (bench/LOG.md, "ranking: static channels taught by USE and MiniLM"). A vector costs
~0.25 ms a text on the e5 tokenizer the main model already holds and the rows are
memory-mapped (package data, 10.4 + 1.3 MB), so a note gets it with its first point
(``channels.FAST``) and a query pays no second model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_gateway.embedders.base import PinnedChannel
from mcp_gateway.embedders.static import HERE, StaticEmbedder

DIM = 128
# channel name -> (model id stored with its vectors, rows file, meta file); a table
# retrained under the same name needs a new model id, or old vectors would mix with new
TABLES: dict[str, tuple[str, Path, Path]] = {
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
    STEP = 64  # a call of 64 texts is ~15 ms: a stop waits for no more than that

    def __init__(self, name: str, threads: int = 1) -> None:
        self.model_id, self._rows, self._meta = TABLES[name]
        self.label = name
        super().__init__(threads)

    def load(self, threads: int) -> Any:  # type: ignore[override]
        return StaticEmbedder.packaged(self._rows, self._meta)
