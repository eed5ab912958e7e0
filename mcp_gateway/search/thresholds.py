"""Per-type distance thresholds a search keeps hits within, per namespace.

The model's defaults (``calibration.py``), then settings, then what the tuning job
learnt from the namespace's own solved queries (``jobs/tuning.py``)."""

from __future__ import annotations

import json
import time

from mcp_gateway.search.calibration import for_model
from mcp_gateway.stores.db import Database

THRESHOLDS_META_KEY = "search.thresholds"


def thresholds_key(namespace: str) -> str:
    """Each namespace's thresholds are tuned from its own solved queries only: one
    tenant's notes must not move another's cut-offs (issue 10)."""
    return f"{THRESHOLDS_META_KEY}:{namespace}"


class ThresholdCache:
    """Per-type thresholds: the model's defaults, then settings, then the tuning job's."""

    def __init__(
        self, db: Database, model_id: str, configured: dict[str, float], ttl_s: float = 15.0
    ) -> None:
        self.db, self.ttl_s = db, ttl_s
        self.defaults = {**for_model(model_id).thresholds, **configured}
        self._values: dict[str, tuple[dict[str, float], float]] = {}  # ns -> (value, loaded)

    async def get(self, namespace: str = "default") -> dict[str, float]:
        cached = self._values.get(namespace)
        if cached is None or time.monotonic() - cached[1] > self.ttl_s:
            stored = await self.db.get_meta(thresholds_key(namespace))
            tuned = json.loads(stored) if stored else {}
            cached = ({**self.defaults, **tuned}, time.monotonic())
            self._values[namespace] = cached
        return cached[0]

    def invalidate(self) -> None:
        self._values.clear()
