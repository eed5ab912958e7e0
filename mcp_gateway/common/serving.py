"""Whether the event loop is serving a request now: a signal for background CPU work.

A new note's static vector is computed in a worker thread just after its ack, and that
thread holds the interpreter while it tokenizes; the next request of a burst then waits
for it (bench/LOG.md, "fast first: the ack, and when a note is searchable"). The doors
say when a request arrives (``touch``), the note service when it serves an acknowledged
write (``serving``), and background work pauses while the gate is closed
(``pauser``; ``embedders.static``). One per process: there is one event loop, and the
threads that read it are that process's.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Gate:
    """Closed while the event loop serves an acknowledged write (``serving``) and for
    ``LINGER_S`` after (its reply is still being written), and for ``HOLD_S`` after any
    request arrives (``touch``: before its handler runs).

    A new note's static vector is computed in a worker thread just after its ack
    (``Indexer.fill_fast``). e5's tokenizer runs there (~0.2-0.3 ms a cold note, more
    beside adds) and holds the interpreter, so the next ``add_note`` of a burst waited
    for it at every step that hands the interpreter over (bench/LOG.md, "fast first:
    the ack, and when a note is searchable"). ``pause``, before each word the tokenizer
    solves, waits while the gate is closed, until ``PAUSE_BUDGET_S`` after the note's
    ack: a steady stream of adds delays a vector by that much at most, then it runs
    through, so the vectors keep up with the adds. A waiting thread holds no
    interpreter. Sleeping between words as well was slower (same section). Vectors are
    computed one at a time: threads woken together by the gate would contend with the
    add being served."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self._serving = 0  # only the event loop's thread counts and schedules
        self._closed_at = 0

    @contextmanager
    def serving(self) -> Iterator[None]:
        self._serving += 1
        self._closed_at += 1
        self._open.clear()
        try:
            yield
        finally:
            self._serving -= 1
            if not self._serving:
                closed = self._closed_at
                asyncio.get_running_loop().call_later(LINGER_S, self._reopen, closed)

    def touch(self) -> None:
        """A request arrived (the session socket read its line): closed for
        ``HOLD_S``, while it is dispatched (an add then holds it with ``serving``)."""
        self._closed_at += 1
        self._open.clear()
        asyncio.get_running_loop().call_later(HOLD_S, self._reopen, self._closed_at)

    def _reopen(self, closed: int) -> None:
        if not self._serving and self._closed_at == closed:  # no add since
            self._open.set()

    def pauser(self, deadline: float) -> Callable[[], None]:
        """A ``pause`` for one text: waits while the gate is closed, until ``deadline``
        (monotonic)."""

        def pause() -> None:
            left = deadline - time.monotonic()
            if left > 0 and not self._open.is_set():
                self._open.wait(left)

        return pause


LINGER_S = 0.002  # after an add returns, while its reply is written (as writebehind.DEFER_S)
HOLD_S = 0.003  # from a request's line read to its handler (~1 ms of dispatch)
requests = Gate()
