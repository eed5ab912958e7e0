"""The build marker of an embedded shard: how many points the last out-of-process build
covered, whether it built an HNSW graph or only sealed them, and how many points were
written since (each write moves a point out of the built segments); and when a new
build is due (``EdgeIndex`` module docstring for why).

Two kinds of build. Above ``exact_below`` points a graph (searches walk it). Below it a
seal: the same optimised segments without a graph (``rebuild/build.py``), because the
points a plain (appendable) segment holds keep their sparse inverted indexes and
bookkeeping in the engine's heap (~5 KB a note with 256 latent terms), while an
optimised segment maps them from its files (``edge_shard.SPARSE_MEMORY``). Searches
below ``exact_below`` scan the dense vectors exactly either way: the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

GRAPH_FILE = "kioku_graph.json"
# A graph build is due again when this many points (at least) were added since the last.
MIN_GRAPH_GROWTH = 1_000


@dataclass(frozen=True, slots=True)
class Marker:
    points: int = 0  # the points the last build covered (0: none yet)
    written: int = 0  # points written since that build
    graph: bool = True  # False: a seal (optimised segments, no graph)


def read_marker(directory: Path) -> Marker:
    """The last build's marker (an empty one where there is none). A marker written
    before seals existed was a graph build's."""
    try:
        marker = json.loads((directory / GRAPH_FILE).read_text("utf-8"))
        return Marker(
            int(marker["points"]), int(marker.get("written", 0)), bool(marker.get("graph", True))
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Marker()


def write_marker(directory: Path, marker: Marker) -> None:
    data = {"points": marker.points, "written": marker.written, "graph": marker.graph}
    (directory / GRAPH_FILE).write_text(json.dumps(data), "utf-8")


def graph_due(points: int, marker: Marker, exact_below: int, seal_every: int = 0) -> bool:
    """Whether an out-of-process build is due. At ``exact_below`` points and up: with no
    graph yet, or with that many points (at least ``MIN_GRAPH_GROWTH``) added or written
    again since the last graph. Below it (``seal_every`` > 0): once ``seal_every``
    points were added or written again since the last build (or since none)."""
    if points >= exact_below:
        built = marker.points if marker.graph else 0
        return max(points - built, marker.written) >= max(exact_below, MIN_GRAPH_GROWTH)
    outside = max(points - marker.points, marker.written)
    return seal_every > 0 and outside >= seal_every


class Builds:
    """What the last build covered and the points written since, counted distinct (a
    note is written three times as it is embedded) up to ``cap``, past which counting
    more decides nothing."""

    def __init__(self, exact_below: int, seal_every: int) -> None:
        self.exact_below = exact_below
        self.seal_every = seal_every
        self.last = Marker()
        self._written: set[str] = set()
        self._cap = max(exact_below, MIN_GRAPH_GROWTH, seal_every)

    def reset(self, marker: Marker) -> None:
        self.last, self._written = marker, set()

    @property
    def written(self) -> int:
        return self.last.written + len(self._written)

    def marker(self) -> Marker:
        """The marker to keep: the last build's, with the writes counted since."""
        return Marker(self.last.points, self.written, self.last.graph)

    def count(self, ids: Iterable[str]) -> None:
        # without a build, growth alone decides
        if self.last.points and len(self._written) < self._cap:
            self._written.update(ids)

    def due(self, points: int) -> bool:
        return graph_due(points, self.marker(), self.exact_below, self.seal_every)
