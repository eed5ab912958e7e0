"""Per-model calibration of the ranking rules, measured on bench/quality's dev split.

Cosine distances are not comparable across models (multilingual-e5 packs everything
into 0.05-0.25, nomic-embed-text spreads wider), so every number that touches a
distance lives here, one entry per model id, and settings override any of them.

The language shift: multilingual-e5 vectors carry a strong "which language is this"
component, so a query ranks same-language memories above a better answer written in
another language. Subtracting ``language_shift`` times the query's language direction
(mean vector of one script's memories minus the mean over scripts, measured by
``bench/quality/calibrate.py``) from the query vector removes most of that bias before
the one index call: no extra round trip, ~0.05 ms. bench/LOG.md has the figures.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cache
from typing import Any

import numpy as np

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.indexing import lexical
from mcp_gateway.search.calibration_vectors import LANGUAGE_DIRECTIONS
from mcp_gateway.search.ranking import RankingParams


@dataclass(frozen=True, slots=True)
class Calibration:
    thresholds: Mapping[str, float]
    # a high-priority hit sorts first when within this distance of the query's best
    high_first_margin: float = 0.0
    # kept only within this distance of the query's best dense hit (1.0: no limit)
    keep_margin: float = 1.0
    language_shift: float = 0.0
    # a second view of the query shifted this much (0: none); a memory's dense score is
    # its best cosine over the two views (see ``shift_views``)
    wide_shift: float = 0.0
    # a newer note this alike (dense cosine) an older one of the same type goes above
    # it (reorder.newer_first; 0: off, e.g. for models whose cosines were not measured)
    newer_similarity: float = 0.0
    measured: bool = True
    directions: Mapping[str, str] = field(default_factory=dict)

    def under(self, s: SearchSettings) -> Calibration:
        """This table with the settings that override it (``is None``, not ``or``: 0
        is a meaningful setting for every one of these)."""
        given = {n: getattr(s, n) for n in _OVERRIDDEN if getattr(s, n) is not None}
        return replace(self, **given)

    def params(
        self, s: SearchSettings, unspaced: float, thresholds: dict[str, float]
    ) -> RankingParams:
        """The ranking rules for one query: ``unspaced``, the share of its letters in
        unspaced scripts; ``thresholds`` read once, with the answer cache's key."""
        # n-gram matches in unspaced scripts are weaker evidence than whole words
        sparse_weight = s.sparse_weight * (1 - unspaced * (1 - s.unspaced_sparse_factor))
        # the settings name every rule as ``RankingParams`` does; four are this query's
        rules = {f.name: getattr(s, f.name) for f in fields(RankingParams)}
        own = {"high_first_margin": self.high_first_margin, "keep_margin": self.keep_margin}
        return RankingParams(
            **rules | own | {"sparse_weight": sparse_weight, "thresholds": thresholds}
        )


# the measured values a setting may override (None: the table's)
_OVERRIDDEN = "high_first_margin keep_margin language_shift wide_shift newer_similarity".split()


_E5 = "local/multilingual-e5-small-q4"
_E5_ENPT = "local/multilingual-e5-small-q4-enpt"
MODELS: dict[str, Calibration] = {
    _E5: Calibration(
        thresholds={"*": 0.2},
        high_first_margin=0.0,
        keep_margin=0.03,
        language_shift=0.5,
        wide_shift=1.0,  # twice the shift: dev 0.686 -> 0.715 (0.75-1.5 all >= 0.704)
        # dev pairs: a replaced fact's notes 0.908-0.973 (median 0.950), two valid facts
        # on one topic 0.889-0.917; dev ALL 0.786 -> 0.802 (bench/LOG.md)
        newer_similarity=0.92,
        directions=LANGUAGE_DIRECTIONS.get(_E5, {}),
    ),
    # measured separately: a weaker model for ja/th whose language component is
    # smaller (dev nDCG@10 0.488 unshifted, 0.496 at 0.25, 0.485 at 0.5)
    _E5_ENPT: Calibration(
        thresholds={"*": 0.2},
        high_first_margin=0.0,
        keep_margin=0.03,
        language_shift=0.25,
        wide_shift=0.5,  # twice the shift, as for e5: dev 0.499 -> 0.513
        directions=LANGUAGE_DIRECTIONS.get(_E5_ENPT, {}),
    ),
    # not measured here (no Ollama on the bench machine): the source design's spread
    "ollama/nomic-embed-text": Calibration(thresholds={"*": 0.5}, measured=False),
}
FALLBACK = Calibration(thresholds={"*": 0.35}, measured=False)


def for_model(model_id: str) -> Calibration:
    """The model's table; an Ollama tag (``nomic-embed-text:latest``) maps to its family."""
    return MODELS.get(model_id) or MODELS.get(model_id.split(":", 1)[0]) or FALLBACK


FULL_SHIFT_TOKENS = 6


@cache
def _direction(b64: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4").astype(np.float64)


def query_script(query: str) -> str:
    """The script group a query is written in. Japanese or Thai prose routinely carries
    Latin identifiers ("Docker", "PR"), so a fifth of unspaced letters already makes a
    query Japanese/Thai; measured on dev, blending directions by letter share lost
    0.012 nDCG@10 against this rule."""
    return lexical.script_of(query)


def _direction_and_ramp(query: str, calib: Calibration) -> tuple[str | None, float]:
    """The query's language direction (``query_script``'s) and how much of it to take.
    Short queries (one to three words: "deploy", "force push") lost 0.07 nDCG@10 on dev
    under the full shift; ramping it in over the first 6 tokens kept crosslang and gave
    them back (dev trigger 0.656 -> 0.710)."""
    script, tokens = lexical.script_of(query), lexical.tokenize(query)
    return calib.directions.get(script), min(1.0, len(tokens) / FULL_SHIFT_TOKENS)


def _shift(vector: Sequence[float], b64: str | None, weight: float) -> list[float]:
    if weight <= 0 or not b64:
        return list(vector)
    direction = _direction(b64)
    if len(direction) != len(vector):
        return list(vector)  # a table for another dimension: leave the query alone
    out = np.asarray(vector, dtype=np.float64) - weight * direction
    norm = float(np.linalg.norm(out)) or 1.0
    shifted: list[float] = (out / norm).tolist()
    return shifted


def shift_views(
    vector: Sequence[float], query: str, calib: Calibration, weight: float, wide: float
) -> list[list[float]]:
    """The query at the calibrated shift and, when ``wide`` > 0, at a wider one.

    One shift weight is a compromise: a cross-language query wants the language
    direction removed entirely (1.0), a same-language paraphrase loses to neighbours in
    other languages when it is (0.5 is its best). Scoring each memory by its better
    cosine over both views lets either kind of answer surface without the query
    having to say which kind it is (dev nDCG@10 0.686 -> 0.715; bench/LOG.md).
    """
    b64, ramp = _direction_and_ramp(query, calib)  # once per query
    views = [_shift(vector, b64, ramp * weight)]
    if wide > 0 and wide != weight:
        views.append(_shift(vector, b64, ramp * wide))
    return views
