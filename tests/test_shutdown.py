"""An owner stops promptly, whatever it is doing -- with real processes.

SIGTERM in the middle of a backlog's embedding ends ``kioku serve --http`` at once (the
embedding starts no further batch; the batch in progress is abandoned), and the next
start embeds every note that was left (reconcile queues it from the truth store). An
owner whose data dir was deleted stops by itself instead of embedding for nobody.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import open_app
from tests.realproc import db_rows, http_proc, wait_until

BACKLOG = 128  # four of the job's 32-note batches: still embedding at the SIGTERM
EXIT_BOUND_S = 5.0  # the issue asks for under a second; this only catches a hang


async def seed(data: Path, n: int) -> None:
    """``n`` acknowledged notes without vectors: what a burst leaves in the truth store."""
    settings = KiokuSettings(data_dir=data, redis_url=None, qdrant_url=None)
    async with open_app(settings, run_jobs=False) as app:
        for i in range(n):
            await app.notes.add(
                NoteFields(
                    text=f"deploy step {i} of service {i % 7} retries after a timeout", type="note"
                )
            )


ExcInfo = tuple[type[BaseException], BaseException, TracebackType]


def embedded(data: Path) -> int:
    """Notes the main model has embedded (``vectors`` holds a row per model: the
    default channels' too)."""
    return int(db_rows(data, "SELECT count(*) FROM notes WHERE embedded_model IS NOT NULL")[0][0])


def remove_tree(path: Path) -> None:
    """``rmtree`` racing the owner, which unlinks its own sockets as it notices."""

    def gone_already(func: Callable[..., Any], name: str, exc: ExcInfo) -> None:
        if not issubclass(exc[0], FileNotFoundError):
            raise exc[1]

    while path.exists():
        shutil.rmtree(path, onerror=gone_already)


def exit_time(proc: subprocess.Popen[bytes], began: float) -> float:
    try:
        proc.wait(timeout=EXIT_BOUND_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {EXIT_BOUND_S} s later") from None
    return time.monotonic() - began


async def test_sigterm_mid_backlog_exits_at_once_and_the_next_start_resumes(
    tmp_path: Path,
) -> None:
    """Then the data dir is deleted under the second owner, which exits by itself (one
    test, not two: each owner start loads the model, seconds of the fast suite)."""
    data = tmp_path / "data"
    await seed(data, BACKLOG)
    with http_proc(data) as owner:
        assert wait_until(lambda: embedded(data) > 0, 60), owner.stderr()[-2000:]
        began = time.monotonic()
        owner.proc.send_signal(signal.SIGTERM)
        took = exit_time(owner.proc, began)
        print(f"SIGTERM to exit: {took:.2f} s with {BACKLOG - embedded(data)} notes left")
        assert owner.proc.returncode == 0, owner.stderr()[-2000:]
        assert "Traceback" not in owner.stderr()
    assert embedded(data) < BACKLOG  # it stopped in the middle, as meant
    with http_proc(data) as owner:
        assert wait_until(lambda: embedded(data) == BACKLOG, 120), owner.stderr()[-2000:]
        pending = "SELECT count(*) FROM notes WHERE embedded_model IS NULL AND deleted = 0"
        assert wait_until(lambda: db_rows(data, pending)[0][0] == 0, 30)

        began = time.monotonic()
        remove_tree(data)
        took = exit_time(owner.proc, began)
        print(f"data dir removed to exit: {took:.2f} s")
        assert owner.proc.returncode == 4  # EXIT_DATA_DIR_GONE
        # rmtree unlinks the dir's entries in the file system's order: the owner names
        # the dir, its lock file or its socket in it, whichever it saw gone first (the
        # socket's line named no "data dir": this read it, as it read the lock's once)
        (why,) = [x for x in owner.stderr().splitlines() if "exiting (nothing left" in x]
        assert "was removed" in why and str(data) in why, why
        assert "Traceback" not in owner.stderr(), owner.stderr()[-3000:]
