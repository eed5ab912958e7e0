"""What a search is asked (``SearchRequest``), and the records it reads beside the index:
a retired record's evidence goes to its lifecycle head (``retired_heads``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_gateway.common.types import point_id
from mcp_gateway.search.ranking import Candidate
from mcp_gateway.search.reorder import Head


class RecordLookup(Protocol):
    async def search_view(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Record id -> {"title", "content", "type", "status", "created_at"} for current records."""

    async def heads_view(
        self, ids: Sequence[str], namespaces: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """Retired record id -> its lifecycle head's {"id", "type", "namespace"}."""


@dataclass(slots=True)
class SearchRequest:
    query: str
    type: str = ""
    domain: str = ""
    top: int = 5
    namespaces: tuple[str, ...] = ("default",)
    # other phrasings of ``query`` (other words, other languages): their dense hits
    # join the query's, each memory scored by its best cosine over every phrasing
    alternatives: tuple[str, ...] = ()
    # only memories of these kinds ("note", "record"; empty: both)
    kinds: tuple[str, ...] = ()
    # keep only what is close by meaning or pinned by an identifier or a name: a match on
    # the query's words alone (common words: "in", "logs") is left out (record_search)
    by_meaning: bool = False


async def retired_heads(
    records: RecordLookup, candidates: Sequence[Candidate], req: SearchRequest
) -> dict[str, Head]:
    """Point id of each retired record among ``candidates`` -> its head's point, for
    heads the request may see (its namespaces and ``type`` filter)."""
    retired = {
        str(c.payload.get("source_id")): c.point_id
        for c in candidates
        if c.payload.get("current") is False
    }
    found = await records.heads_view(list(retired), req.namespaces)
    heads: dict[str, Head] = {}
    for rid, head in found.items():
        if req.type and head["type"] != req.type:
            continue
        payload = {
            "kind": "record",
            "source_id": head["id"],
            "type": head["type"],
            "domain": "",
            "priority": "",
            "namespace": head["namespace"],
            "current": True,
        }
        heads[retired[rid]] = Head(point_id("record", head["id"]), payload)
    return heads
