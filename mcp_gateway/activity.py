"""The activity log: one JSON line per tool call in ``logs/activity.jsonl``.

It is the raw material of the source design's PDCA loop: which queries found nothing
useful, which query led to which lesson. The threshold-tuning and re-ranking jobs read
it back. Each entry is written with one ``write`` on an ``O_APPEND`` file, so lines
from several processes never interleave.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

log = logging.getLogger(__name__)

PREVIEW_CHARS = 120


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


class ActivityLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append_sync(self, event: str, **fields: Any) -> None:
        entry = {"ts": round(time.time(), 3), "event": event, **fields}
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            # The log is advisory: a full disk must not fail the user's tool call.
            log.warning("activity log not written (%s): %s", self.path, exc)

    async def append(self, event: str, **fields: Any) -> None:
        await anyio.to_thread.run_sync(lambda: self.append_sync(event, **fields))

    def read_sync(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line after a crash
                if isinstance(entry, dict) and entry.get("ts", 0) >= since:
                    yield entry
