"""Per-type distance thresholds from "which query led to which note".

Pairs (query, note) come from the ``solved_query`` of live notes and from the activity
log's ``add_note`` events (which keep the original query even if the note's field was
edited since). For each pair the query is embedded and compared with the note's vector
from the truth store (no index needed, so this runs on any worker); the cosine
distance is where the query "still found its note". A type's threshold is a high
quantile of those distances plus a margin, clamped to a sane range; types with too few
pairs keep the fallback ``"*"``. Each namespace is tuned from its own pairs only and
stored as JSON under its own SQLite meta key (``thresholds_key``), which
``ThresholdCache`` reads for searches made from that namespace.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from mcp_gateway.common.events import ADD_NOTE, NoteAdded
from mcp_gateway.common.types import Note
from mcp_gateway.queue.context import JobContext
from mcp_gateway.search.thresholds import thresholds_key

log = logging.getLogger(__name__)

QUANTILE = 0.9
MARGIN = 0.05
MIN_PAIRS = 3
LOWEST, HIGHEST = 0.10, 0.80
MAX_PAIRS = 500
LOG_WINDOW_S = 90 * 86_400


@dataclass(slots=True)
class TuningReport:
    thresholds: dict[str, float] = field(default_factory=dict)  # the app's own namespace
    by_namespace: dict[str, dict[str, float]] = field(default_factory=dict)
    pairs: int = 0
    found: int = 0


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def threshold_from(distances: Sequence[float]) -> float:
    value = quantile(distances, QUANTILE) + MARGIN
    return round(min(max(value, LOWEST), HIGHEST), 4)


def compute_thresholds(distances: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """{type: [distance at which a solved query found its note]} -> {type: threshold}."""
    out = {t: threshold_from(d) for t, d in distances.items() if len(d) >= MIN_PAIRS}
    everything = [x for d in distances.values() for x in d]
    if len(everything) >= MIN_PAIRS:
        out["*"] = threshold_from(everything)
    return out


def pairs_from_log(entries: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    added = (NoteAdded.read(e) for e in entries)
    return [
        (str(a.solved_query), str(a.id))
        for a in added
        if a.event == ADD_NOTE and a.solved_query and a.id
    ]


async def collect_pairs(kc: JobContext) -> list[tuple[str, Note]]:
    solved = await kc.notes.solved(limit=MAX_PAIRS)
    since = time.time() - LOG_WINDOW_S
    logged = await anyio.to_thread.run_sync(lambda: pairs_from_log(kc.activity.read_sync(since)))
    extra = await kc.notes.get_many(list({nid for _, nid in logged}))
    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[str, Note]] = []
    candidates = [(n.solved_query, n) for n in solved]
    candidates += [(q, extra[nid]) for q, nid in logged if nid in extra]
    for query, note in candidates:
        if (query, note.id) not in seen:
            seen.add((query, note.id))
            pairs.append((query, note))
    return pairs[-MAX_PAIRS:]


async def tune(kc: JobContext) -> TuningReport:
    report = TuningReport()
    distances: dict[str, dict[str, list[float]]] = {}  # namespace -> type -> distances
    pairs = await collect_pairs(kc)
    model = kc.embedder.model_id
    stored = await kc.vectors.get("note", model, [note.id for _, note in pairs])
    for query, note in pairs:
        report.pairs += 1
        vec = stored.get(note.id)
        if vec is None:
            continue  # not embedded yet: the next run measures it
        q = np.asarray(await kc.embedder.embed_query(query), dtype=np.float32)
        report.found += 1
        distance = max(0.0, 1.0 - float(q @ np.asarray(vec.vector, dtype=np.float32)))
        # per namespace: one tenant's solved queries must not move another's cut-offs
        distances.setdefault(note.namespace, {}).setdefault(note.type, []).append(distance)
    for namespace, per_type in distances.items():
        tuned = compute_thresholds(per_type)
        if tuned:
            report.by_namespace[namespace] = tuned
            await kc.db.set_meta(thresholds_key(namespace), json.dumps(tuned, sort_keys=True))
    report.thresholds = report.by_namespace.get(kc.namespaces[0], {})
    if report.by_namespace:
        kc.thresholds_changed()
    log.info(
        "tuned thresholds from %d pairs (%d measured) in %d namespace(s)",
        report.pairs,
        report.found,
        len(report.by_namespace),
    )
    return report
