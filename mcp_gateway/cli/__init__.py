"""The command-line door: ``kioku`` and its commands, through the owner or in-process."""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``kioku``. For ``kioku worker``, SIGTERM is held from the first line: the command
    becomes the worker process (exec), which takes it over from its own first line, so a
    stop sent during the seconds of imports before that ends the worker cleanly instead
    of by the signal."""
    args = sys.argv[1:] if argv is None else argv
    if next((a for a in args if not a.startswith("-")), None) == "worker":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    from mcp_gateway.cli.main import main as run

    return run(argv)
