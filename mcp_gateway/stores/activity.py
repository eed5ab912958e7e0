"""The activity log: one JSON line per tool call in ``logs/activity.jsonl``.

It is the raw material of the source design's PDCA loop: which queries found nothing
useful, which query led to which lesson. The threshold-tuning and re-ranking jobs read
it back. Each entry is written with one ``write`` on an ``O_APPEND`` file, so lines
from several processes never interleave.

The reply never waits for the log: ``append`` hands the entry to one writer thread per
log and returns (before: one thread hop and a file open/write/close awaited on every
tool call). ``read_sync`` and ``flush`` wait until everything appended so far is on
disk, so a reader in this process always sees its own entries; the writer is a daemon
thread that an ``atexit`` hook drains, so entries are not lost at a normal exit.

The writer waits ``SETTLE_S`` after an entry arrives before it writes: the entry is
appended just before the reply is sent, and a thread that woke at once would take the
GIL from the reply; entries that arrive meanwhile go in the same ``write``.

On PostgreSQL, and on a SQLite file several gateways share, the log is a table
(``DatabaseActivityLog``, same writer thread, one
multi-row insert per batch): gateways and workers on other hosts append to and read
one log, so the tuning and re-ranking jobs see every gateway's calls wherever they run.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_gateway.stores.db import Database

log = logging.getLogger(__name__)


SETTLE_S = 0.005
# ``read_recent``: how far back a tail read goes at most (a burst of entries in the last
# minutes must not turn one call into a read of the whole log), in bytes and in rows
TAIL_BYTES = 8 << 20
TAIL_ROWS = 20_000
# entries of several processes are appended by batch: one stamped a little earlier can
# follow a later one in the file, so the tail read goes this much further back
TAIL_SKEW_S = 60.0
TAIL_CHUNK = 64 << 10


class ActivityLog:
    # whether other processes append to this log (other gateways, on a shared store)
    shared = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def append_sync(self, event: str, **fields: Any) -> None:
        self._write({"ts": round(time.time(), 3), "event": event, **fields})

    def _write(self, *entries: dict[str, Any]) -> None:
        line = "".join(_line(e) for e in entries)
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
        """Queue the entry (stamped now) for the writer thread; returns at once."""
        self._queue.put({"ts": round(time.time(), 3), "event": event, **fields})
        if self._writer is None:
            self._start()

    def _start(self) -> None:
        with self._start_lock:
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._drain_forever, name="kioku-activity-log", daemon=True
                )
                self._writer.start()
                atexit.register(self.flush)

    def _drain_forever(self) -> None:
        while True:
            entries = [self._queue.get()]
            time.sleep(SETTLE_S)
            while True:
                try:
                    entries.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                self._write(*entries)
            except Exception:  # never let anything stop the writer
                log.exception("activity log entries dropped")
            finally:
                for _ in entries:
                    self._queue.task_done()

    def flush(self) -> None:
        """Block until every entry appended so far is written (sync: call from a thread)."""
        if self._writer is not None:
            self._queue.join()

    def read_sync(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        self.flush()
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

    def read_recent(self, since: float) -> list[dict[str, Any]]:
        """The entries stamped ``since`` or later, oldest first, read from the end of
        the log (at most ``TAIL_BYTES`` of it): what a call needs of the last minutes
        without reading months of log."""
        self.flush()
        try:
            fh = self.path.open("rb")
        except OSError:
            return []
        with fh:
            pos = fh.seek(0, os.SEEK_END)
            tail = b""
            while pos > 0 and len(tail) < TAIL_BYTES:
                step = min(TAIL_CHUNK, pos)
                pos -= step
                fh.seek(pos)
                tail = fh.read(step) + tail
                first = tail.split(b"\n", 2)
                # the oldest whole line read so far (the first may be cut by the seek)
                line = first[1] if pos > 0 and len(first) > 2 else first[0]
                if _stamp(line) < since - TAIL_SKEW_S:
                    break
        out = []
        for line in tail.splitlines()[1 if pos > 0 else 0 :]:
            entry = _entry(line)
            if entry is not None and entry.get("ts", 0) >= since:
                out.append(entry)
        return sorted(out, key=lambda e: e.get("ts", 0))


class DatabaseActivityLog(ActivityLog):
    """The activity log as the ``activity_log`` table of a PostgreSQL truth store."""

    shared = True

    def __init__(self, db: Database) -> None:
        super().__init__(Path("activity_log"))  # a name for messages, no file
        self.db = db

    def _write(self, *entries: dict[str, Any]) -> None:
        rows = [(float(e.get("ts", 0.0)), line) for e in entries if (line := _line(e))]
        if not rows:
            return
        try:
            self.db.run_sync(
                lambda c: c.executemany("INSERT INTO activity_log(ts, entry) VALUES (?, ?)", rows)
            )
        except Exception as exc:  # advisory, as the file: never fail the tool call
            log.warning("activity log not written (%d entries): %s", len(rows), exc)

    def read_sync(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        self.flush()
        rows = self.db.run_sync(
            lambda c: c.execute(
                # in time order: batches from several processes interleave in n
                "SELECT entry FROM activity_log WHERE ts >= ? ORDER BY ts, n",
                (since,),
            ).fetchall()
        )
        for row in rows:
            try:
                entry = json.loads(row[0])
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield entry

    def read_recent(self, since: float) -> list[dict[str, Any]]:
        self.flush()
        rows = self.db.run_sync(
            lambda c: c.execute(
                "SELECT entry FROM activity_log WHERE ts >= ? ORDER BY ts DESC, n DESC LIMIT ?",
                (since, TAIL_ROWS),
            ).fetchall()
        )
        return [e for row in reversed(rows) if (e := _entry(row[0])) is not None]


def open_activity_log(db: Database, path: Path, *, shared: bool = False) -> ActivityLog:
    """The deployment's activity log: a table on PostgreSQL, or on a SQLite file that
    several gateways share (``shared``: each data dir's file would split the log), else
    the file at ``path``."""
    if db.dialect == "postgres" or shared:
        return DatabaseActivityLog(db)
    return ActivityLog(path)


def _line(entry: dict[str, Any]) -> str:
    try:
        return json.dumps(entry, ensure_ascii=False, default=str) + "\n"
    except (TypeError, ValueError):  # e.g. a circular structure: drop this entry only
        log.exception("activity log entry dropped")
        return ""


def _entry(line: str | bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a torn line after a crash, or one cut by a tail read
    return entry if isinstance(entry, dict) else None


def _stamp(line: bytes) -> float:
    """The ``ts`` of one log line (+inf where it cannot be read: read further back)."""
    entry = _entry(line)
    ts = entry.get("ts") if entry is not None else None
    return float(ts) if isinstance(ts, int | float) else float("inf")
