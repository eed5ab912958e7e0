"""Freed heap memory given back to the system once the owner is quiet.

glibc keeps what a thread freed in its heap unless whole pages at the heap's top are
free, so what a search or a document batch allocated and freed between longer-lived
objects stays resident until ``malloc_trim`` gives the free pages back. Measured in
process at 1,000 notes (bench/LOG.md, "footprint"): 300 searches left 6 MB of such
pages and a burst's last batches 9 MB. The document lanes trim every 30 s while they
run (``trim_heap``); ``trim_when_quiet`` trims once more when the work has
stopped: after requests or batches (``touched``), once a check finds none since the
previous one and no request in flight. A trim walks the heap (a few milliseconds) and
changes no allocation.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable

import anyio
import anyio.to_thread

QUIET_S = 2.0  # between checks; a trim waits for one check with no new work
_work = 0


def touched() -> None:
    """Work that frees memory ran (a document batch); the owner counts its requests."""
    global _work
    _work += 1


def work() -> int:
    return _work


def trim() -> None:
    """glibc's ``malloc_trim(0)``: every heap's free pages back to the system."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl): nothing to trim
        pass


async def trim_when_quiet(
    activity: Callable[[], int],
    quiet: Callable[[], bool],
    stop: anyio.Event,
    every_s: float = QUIET_S,
    trimmer: Callable[[], None] = trim,
) -> None:
    """Trim once each time the work counted by ``activity`` stops: at a check that
    finds it unchanged since the previous check (but changed since the last trim) and
    ``quiet()`` (no request in flight)."""
    trimmed = seen = activity()
    while not stop.is_set():
        await anyio.sleep(every_s)
        now = activity()
        if now != trimmed and now == seen and quiet():
            await anyio.to_thread.run_sync(trimmer)
            trimmed = now
        seen = now


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters
_M_ARENA_MAX = -8
_MMAP_THRESHOLD_BYTES = 256 * 1024


def return_large_buffers() -> None:
    """Have glibc give large freed buffers back to the system (a fixed mmap threshold).

    A forward pass allocates and frees activation buffers of several MB. glibc's default
    threshold rises after such a free, so later buffers come from the heap and stay in
    the process: measured over 240 documents and 100 queries, the process grew 84 MB
    with it, 66 MB with a fixed 256 KB threshold (and 136 MB with onnxruntime's arena).
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
        except OSError:  # not glibc (musl): nothing to tune
            return
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
        # threads created from here on share two heaps instead of one each (up to 8 per
        # core): an owner at 2,000 notes held ~6 MB less (MALLOC_ARENA_MAX=2, bench/LOG.md)
        libc.mallopt(_M_ARENA_MAX, 2)


_TRIM_EVERY_S = 30.0
_trimmed_at = 0.0


def trim_heap() -> None:
    """Give the heap's free pages back to the system (``trim``), at most every
    ``_TRIM_EVERY_S``; called after a document batch. Freed chunks between live ones
    stay in the process otherwise: measured in an owner after 400 notes and 100
    searches, RssAnon 164 -> 155 MB, the walk a few milliseconds. The owner trims once
    more when the batches stop (``heap.trim_when_quiet``)."""
    global _trimmed_at
    touched()
    now = time.monotonic()
    if now - _trimmed_at < _TRIM_EVERY_S:
        return
    _trimmed_at = now
    trim()
