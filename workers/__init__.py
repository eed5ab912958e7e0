"""``kioku worker`` processes: arq workers that run kioku's jobs over Redis.

A worker opens the truth store (SQLite), the embedder and the activity log -- never
the index: it embeds, tunes, re-ranks and exports, and the owner of the data dir
applies what it wrote. Any number of workers run beside one owner (``python -m
workers``, which ``kioku worker`` runs).
"""

import signal
from types import FrameType


class StopRequested(BaseException):
    """SIGTERM before the worker's own handler (arq's) took over: while Python imports
    the worker's modules and reads settings, before anything is opened or taken from
    the queue, so stopping there is clean."""


def _stop_requested(_signum: int, _frame: FrameType | None) -> None:
    raise StopRequested


def stop_on_sigterm() -> None:
    """From the first line of ``python -m workers``: a SIGTERM ends the process with
    ``StopRequested`` instead of the signal (rc -15). ``kioku worker`` blocks SIGTERM
    across its exec into this process, so one sent in between is delivered here."""
    signal.signal(signal.SIGTERM, _stop_requested)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
