"""The embedding backlog as the CLI shows it: `kioku status`'s lines, and `kioku import`
following it until the notes it wrote are settled.

The owner reports, per embedding model, the notes and records without a vector of it
(``waiting``), its drafts still to be embedded exactly (a burst's backlog is embedded
first on the faster pass, then again exactly), and its vectors written a second over
the last minute (a draft redone exactly counts once; ``services/maintenance.py``).
Everything here goes to stderr: stdout carries the command's result.

The estimate counts work, not notes: a note without a vector still needs its draft pass
and its exact pass (two units; one when the owner does not draft, and then the units
also fall two at a time, so the estimate holds), a draft its exact pass (one). The rate
is what this command saw fall since it started following, so the first estimate comes
after the first poll that saw progress.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import anyio

from mcp_gateway.cli.client import Memory

# a line at most this often where stderr is not a terminal (a log, a CI job): no
# carriage-return animation there, and not a line a second either
PLAIN_EVERY_S = 10.0
# stop following a backlog that has not moved for this long (an owner whose embedder is
# down, notes whose embedding failed for good): the notes are stored either way
STALL_S = 120.0


def backlog_lines(backlog: Sequence[dict[str, Any]]) -> list[str]:
    """`kioku status`: one line per embedding model."""
    out: list[str] = []
    for item in backlog:
        units = 2 * int(item["waiting"]) + int(item["drafts"])
        rate = float(item["per_s"])
        line = (
            f"{item['model']}: {item['waiting']} waiting for a vector, {item['drafts']} "
            f"drafts to embed exactly; {rate:.1f} vectors/s over the last "
            f"{int(item['window_s'])} s"
        )
        if units and rate > 0:  # a rough estimate: a rate of vectors, units of work
            line += f" (about {duration(units / rate)} left)"
        out.append(line)
    return out


def searchable_lines(figures: dict[str, Any]) -> list[str]:
    """`kioku status`: how long after its ack a recent note was searchable by meaning
    (``index.ack_lags``): by its fast vector (``search.fast_first``), by its first e5
    vector; a line for each the owner has figures of."""
    out: list[str] = []
    for key, name in (("fast", "fast vector"), ("first_e5", "first e5 vector")):
        q = figures.get(key)
        if q:
            out.append(
                f"{name} after the ack: p50 {_lag(q['p50_s'])}, p95 {_lag(q['p95_s'])}, "
                f"p99 {_lag(q['p99_s'])} (last {q['count']} notes)"
            )
    return out


def _lag(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass(slots=True)
class Seen:
    waiting: int
    drafts: int

    @property
    def units(self) -> int:
        return 2 * self.waiting + self.drafts


def seen(status: dict[str, Any]) -> Seen:
    """The notes still waiting: the backlog is per embedding model (the main one and each
    further channel), and a note waits while any of them lacks its vector, so the
    largest count, not the sum (which counted each note once per model)."""
    items = status.get("backlog") or []
    return Seen(
        max((int(i["waiting"]) for i in items), default=0),
        max((int(i["drafts"]) for i in items), default=0),
    )


async def follow(
    memory: Memory,
    added: int,
    stream: TextIO = sys.stderr,
    *,
    poll_s: float = 1.0,
    plain_every_s: float = PLAIN_EVERY_S,
    stall_s: float = STALL_S,
    clock: Callable[[], float] = time.monotonic,
) -> Seen:
    """Report the owner's backlog on ``stream`` until nothing waits and no draft is left;
    a terminal gets one line rewritten in place, anything else a line every
    ``plain_every_s`` and the last. ``added``: the notes this import wrote (for the
    line's "of N"). Returns the last figures: zero and zero, or what was left when the
    backlog did not move for ``stall_s`` (said on ``stream``)."""
    tty = stream.isatty()
    began = clock()
    first = seen(await memory.status())
    total = max(added, first.waiting)
    last_plain = -plain_every_s
    now = first
    moved_at, moved_units = began, first.units
    while True:
        elapsed = clock() - began
        done = max(0, first.units - now.units)
        rate = done / elapsed if elapsed > 0 else 0.0
        settled = now.waiting == 0 and now.drafts == 0
        line = (
            f"kioku: embedding: {total - now.waiting:,}/{total:,} searchable, "
            f"{max(0, total - now.waiting - now.drafts):,}/{total:,} exact"
        )
        if settled:
            line += f"; settled in {duration(elapsed)}"
            if elapsed > 0 and total:
                line += f" ({total / elapsed:.1f} notes/s)"
        elif rate > 0:
            line += f"; about {duration(now.units / rate)} left"
        else:
            line += "; estimating"
        if tty:
            stream.write("\r" + line.ljust(100) + ("\n" if settled else ""))
            stream.flush()
        elif settled or elapsed - last_plain >= plain_every_s:
            print(line, file=stream, flush=True)
            last_plain = elapsed
        if settled:
            return now
        if clock() - moved_at >= stall_s:
            if tty:
                stream.write("\n")
            print(
                f"kioku: the backlog has not moved for {duration(stall_s)}: stopped following "
                "it (the notes are stored; `kioku status` shows the backlog)",
                file=stream,
                flush=True,
            )
            return now
        await anyio.sleep(poll_s)
        now = seen(await memory.status())
        if now.units != moved_units:
            moved_at, moved_units = clock(), now.units
