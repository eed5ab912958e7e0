"""The HNSW graph marker of an embedded shard: how many points the last graph build
covered and how many were written since (each write moves a point out of the graph),
and when a new build is due (``EdgeIndex`` module docstring for why)."""

from __future__ import annotations

import json
from pathlib import Path

GRAPH_FILE = "kioku_graph.json"
# A build is due again when this many points (at least) were added since the last graph.
MIN_GRAPH_GROWTH = 1_000


def read_marker(directory: Path) -> tuple[int, int]:
    """(points the graph covered, points written since), from the marker."""
    try:
        marker = json.loads((directory / GRAPH_FILE).read_text("utf-8"))
        return int(marker["points"]), int(marker.get("written", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0, 0


def write_marker(directory: Path, points: int, written: int) -> None:
    marker = {"points": points, "written": written}
    (directory / GRAPH_FILE).write_text(json.dumps(marker), "utf-8")


def graph_due(points: int, graph_points: int, written: int, exact_below: int) -> bool:
    """Above ``exact_below`` points, with no graph yet, or with that many points (at
    least ``MIN_GRAPH_GROWTH``) added or written again since the last one was built."""
    growth = max(exact_below, MIN_GRAPH_GROWTH)
    outside = max(points - graph_points, written)
    return points >= exact_below and outside >= growth
