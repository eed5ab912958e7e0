"""``kioku worker`` processes: arq workers that run kioku's jobs over Redis.

A worker opens the truth store (SQLite), the embedder and the activity log -- never
the index: it embeds, tunes, re-ranks and exports, and the owner of the data dir
applies what it wrote. Any number of workers run beside one owner (``python -m
workers``, which ``kioku worker`` runs).
"""

import signal
import sys
from collections.abc import Callable
from types import FrameType


class StopRequested(BaseException):
    """SIGTERM before the worker's own handler (arq's) took over: while Python imports
    the worker's modules and reads settings, before anything is opened or taken from
    the queue, so stopping there is clean."""


_requested = False


def _stop_requested(_signum: int, _frame: FrameType | None) -> None:
    global _requested
    _requested = True
    raise StopRequested


def stop_was_requested() -> bool:
    """Whether a SIGTERM came before arq's handler took over. Raised inside a library,
    ``StopRequested`` may reach ``python -m workers`` as another exception (pydantic
    building a model's validator wraps it in a ``SchemaError``), so the entry point asks
    this rather than reading the exception's type."""
    return _requested


def stop_on_sigterm() -> None:
    """From the first line of ``python -m workers``: a SIGTERM ends the process with
    ``StopRequested`` instead of the signal (rc -15). ``kioku worker`` blocks SIGTERM
    across its exec into this process, so one sent in between is delivered here."""
    signal.signal(signal.SIGTERM, _stop_requested)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def run_entry(start: Callable[[], int]) -> int:
    """``python -m workers``: ``start`` (the imports, settings and the worker itself)
    under ``stop_on_sigterm``; its exit code, or 0 with one line on stderr when a
    SIGTERM came before arq's handler took over, whatever exception it surfaced as."""
    try:
        stop_on_sigterm()  # a SIGTERM held until now is delivered here
        return start()
    except BaseException:
        if not stop_was_requested():
            raise
        print("kioku worker: stopped by SIGTERM before it started; no job taken", file=sys.stderr)
        return 0
