"""The truth store's vectors table: dense vectors with their latent terms."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_gateway.common.types import SparseVector
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.vectors import VectorStore, pack_terms, unpack_terms


@pytest.fixture
async def store(database_location: Path | str) -> AsyncIterator[VectorStore]:
    db = Database(database_location)
    await db.open()
    yield VectorStore(db)
    await db.close()


async def test_terms_round_trip_beside_the_vector(store: VectorStore) -> None:
    terms = SparseVector([3, 70, 16_383], [0.5, 2.25, 1.0])  # exact in float16
    await store.put(
        "note",
        "m",
        [("a", "h1", [1.0, 0.0], terms), ("b", "h2", [0.0, 1.0], None), ("c", "h3", [0.6, 0.8])],
    )
    got = await store.get("note", "m", ["a", "b", "c"])
    assert got["a"].terms == terms and got["a"].vector == [1.0, 0.0]
    assert got["b"].terms is None and got["c"].terms is None
    assert sorted(await store.without_terms("m")) == [("note", "b"), ("note", "c")]
    # re-embedding with terms replaces the row, terms included
    await store.put("note", "m", [("b", "h2", [0.0, 1.0], SparseVector([], []))])
    assert (await store.get("note", "m", ["b"]))["b"].terms == SparseVector([], [])
    assert await store.without_terms("m") == [("note", "c")]


async def test_a_draft_never_replaces_the_exact_vector_of_the_same_text(
    store: VectorStore,
) -> None:
    """Before: the job's draft of a note, stored after the session context's fold (or the
    prefetch) had stored its exact vector, replaced it, and the note was embedded exactly
    a second time once reconcile found the draft."""
    await store.put("note", "m", [("a", "h1", [1.0, 0.0]), ("b", "h1", [1.0, 0.0])])
    await store.put("note", "m", [("a", "h1", [0.0, 1.0]), ("b", "h2", [0.0, 1.0])], draft=True)
    got = await store.get("note", "m", ["a", "b"])
    assert (got["a"].vector, got["a"].draft) == ([1.0, 0.0], False)
    assert (got["b"].vector, got["b"].draft, got["b"].content_hash) == ([0.0, 1.0], True, "h2")
    # an exact vector replaces a draft
    await store.put("note", "m", [("b", "h2", [1.0, 0.0])])
    assert (await store.get("note", "m", ["b"]))["b"].draft is False


def test_empty_terms_are_not_missing_terms() -> None:
    assert pack_terms(SparseVector([], [])) == b"" and pack_terms(None) is None
    assert unpack_terms(b"") == SparseVector([], []) and unpack_terms(None) is None


def test_packed_terms_keep_their_values_to_float16() -> None:
    terms = SparseVector([0, 9, 65_535], [0.3442726, 0.57109475, 2.7432556])
    back = unpack_terms(pack_terms(terms))
    assert back is not None and back.indices == terms.indices
    assert all(abs(a - b) <= 1e-3 * b for a, b in zip(back.values, terms.values, strict=True))
    assert len(pack_terms(terms) or b"") == 4 * 3


def test_a_term_index_past_the_format_is_refused() -> None:
    with pytest.raises(ValueError, match="new version"):
        pack_terms(SparseVector([70_000], [1.0]))
