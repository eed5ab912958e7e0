"""Logs a flood cannot grow without bound (issue 47: 157 MB of stderr in 13 s).

- ``Repeats``: a handler filter letting through at most ``burst`` records of one
  message template (logger + format string) per ``window_s``; the rest are counted,
  and the next record of that template let through says how many were dropped. A
  traceback repeated a thousand times a second becomes a few lines a minute.
- ``RotatingStderr``: the daemon's stderr is its log file (``logs/gateway.log``, opened
  by the process that spawned it); once it passes ``max_bytes`` it is renamed to
  ``gateway.log.1`` (the previous one dropped) and a fresh file takes over file
  descriptor 2, so uvicorn's and Python's own writes to stderr rotate too.
- ``configure``: the entry points' logging set-up, both applied.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


class Every:
    """``due()`` is True at most once per ``interval_s`` (monotonic)."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._next = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self.interval_s
        return True


class Repeats(logging.Filter):
    """At most ``burst`` records per message template per ``window_s``; the rest counted."""

    def __init__(self, burst: int = 5, window_s: float = 60.0) -> None:
        super().__init__()
        self.burst, self.window_s = burst, window_s
        # template -> [window start, records let through, records dropped]
        self._seen: dict[tuple[str, str], list[float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg)[:200])
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is None or now - seen[0] >= self.window_s:
            dropped = int(seen[2]) if seen else 0
            if len(self._seen) > 4096:  # bounded too: many distinct templates
                self._seen.clear()
            self._seen[key] = [now, 1.0, 0.0]
            if dropped:
                record.msg = f"{record.msg} [{dropped} more like this dropped]"
            return True
        if seen[1] < self.burst:
            seen[1] += 1
            return True
        seen[2] += 1
        return False


class RotatingStderr(logging.StreamHandler):  # type: ignore[type-arg, unused-ignore]
    """A stderr handler that rotates ``path`` (the file on fd 2) past ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        super().__init__(sys.stderr)
        self.path, self.max_bytes = path, max_bytes

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        try:
            if os.fstat(2).st_size > self.max_bytes:
                self._rotate()
        except OSError:
            pass

    def _rotate(self) -> None:
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            sys.stderr.flush()
            os.dup2(fd, 2)
        finally:
            os.close(fd)


def stderr_file(expected: Path) -> bool:
    """Whether fd 2 is the file ``expected`` (the daemon's log, not a terminal)."""
    try:
        mine, there = os.fstat(2), os.stat(expected)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def configure(
    level: str | int, *, fmt: str = FORMAT, rotate: Path | None = None, max_bytes: int = 0
) -> None:
    """Root logging to stderr with ``Repeats``; rotating ``rotate`` when it is stderr."""
    handler: logging.Handler
    if rotate is not None and max_bytes > 0 and stderr_file(rotate):
        handler = RotatingStderr(rotate, max_bytes)
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(Repeats())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
