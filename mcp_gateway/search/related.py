"""Whether the further dense channels agree that a candidate is about the query.

The fused score says how a memory ranks against the others, not whether it is about
the query: in a small store an unrelated lesson sits at 0.8-0.9 of the best hit's score
as often as a related one does ("the server chokes on big uploads" -> "Run `alembic
upgrade head` ...", 0.80; a Thai lesson on the uploads' 413 limit, 0.84). A further
channel (static USE, MiniLM) is a second model's view of the same pair: a lesson it
places far from the query (cosine < ``RankingParams.related_floor``; its unrelated
questions' best hits sit at ~0.25-0.35, ``match.CENTRE``) is not related to it, whatever
its rank. ``ranking.related`` asks this beside the score ratio for [RECENT]
(bench/quality/recent_rel.py, bench/LOG.md); priority keeps the ratio alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from mcp_gateway.common.types import IndexHit

if TYPE_CHECKING:
    from mcp_gateway.search.ranking import Candidate


def mark(
    candidates: Iterable[Candidate],
    channels: Mapping[str, Sequence[IndexHit]],
    reads: Mapping[str, Collection[str] | None],
) -> None:
    """Set each candidate's ``channel_low``: the lowest cosine a further channel that
    reads its script gave it among its hits. A channel that did not return it abstains
    (None where none did): it may not have read the memory yet (a search embeds a new
    note for the main model alone, ``fresh.py``), and on the labelled set counting it
    as below the floor changed nothing (bench/LOG.md)."""
    scores = [(reads.get(name), {h.id: h.score for h in hits}) for name, hits in channels.items()]
    for cand in candidates:
        script = cand.payload.get("script", "latin")
        low: float | None = None
        for can, by_id in scores:
            s = by_id.get(cand.point_id) if can is None or script in can else None
            if s is not None and (low is None or s < low):
                low = s
        cand.channel_low = low
