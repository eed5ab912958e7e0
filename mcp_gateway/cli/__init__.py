"""The command-line door: ``kioku`` and its commands, through the owner or in-process."""

from __future__ import annotations

import signal
import sys

from mcp_gateway.common import startup_gc

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``kioku``. For ``kioku worker``, SIGTERM is held from the first line: the command
    becomes the worker process (exec), which takes it over from its own first line, so a
    stop sent during the seconds of imports before that ends the worker cleanly instead
    of by the signal."""
    args = sys.argv[1:] if argv is None else argv
    if next((a for a in args if not a.startswith("-")), None) == "worker":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if argv is None:  # a process of its own: the collector waits for its start (startup_gc)
        startup_gc.hold()
    from mcp_gateway.cli.main import main as run

    return run(argv)
