"""Where the test suite's time goes, per test: wall time and CPU, robust to a shared machine.

A pytest plugin and its report. Load it from this directory:

    PYTHONPATH=bench SUITE_CLOCK_OUT=run.tsv \\
        .venv/bin/pytest -q -m "not slow" -p suite_clock
    python bench/suite_clock.py run.tsv [other.tsv]

Each test (setup, call and teardown together) appends one TSV line: node id, wall
seconds, this process's CPU (user+sys, every thread) and the CPU of the children it
waited for (``RUSAGE_CHILDREN``: a ``kioku`` command run to its end, a server stopped
and reaped). Wall time on a loaded 2-core machine says more about the load than about
the test; CPU mostly does not, so a change is judged by CPU, and the wall time beyond
the CPU (``idle``) points at fixed sleeps, timeouts and waits on other processes. Not
counted: processes nobody waits for (a daemon a test leaves to idle out, the machine's
PostgreSQL). A session fixture's set-up counts to the first test that uses it. Each
fixture set-up also appends a ``fixture:NAME:SCOPE`` line with its own cost (less the
fixtures it asked for): the report sums them per fixture.

The report: the whole run's sums, the top tests by wall, by CPU and by idle time, and
per file; with a second TSV, each file's change (second minus first).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

OUT = os.environ.get("SUITE_CLOCK_OUT", "suite_clock.tsv")


def _now() -> tuple[float, float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


_STACK: list[list[float]] = []  # per fixture being set up: the CPU its own set-ups used


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest
) -> Iterator[None]:
    """Each fixture set-up's own CPU (less the fixtures it asked for, set up inside it),
    one ``fixture:NAME`` line per set-up: what a fixture costs over the whole run."""
    before = _now()
    _STACK.append([0.0, 0.0, 0.0])
    yield
    inner = _STACK.pop()
    after = _now()
    total = [b - a for a, b in zip(before, after, strict=True)]
    if _STACK:
        _STACK[-1] = [x + y for x, y in zip(_STACK[-1], total, strict=True)]
    wall, own, kids = (t - i for t, i in zip(total, inner, strict=True))
    with open(OUT, "a", encoding="utf-8") as out:
        out.write(
            f"fixture:{fixturedef.argname}:{fixturedef.scope}\t{wall:.3f}\t{own:.3f}\t{kids:.3f}\n"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    before = _now()
    yield
    after = _now()
    wall, own, kids = (b - a for a, b in zip(before, after, strict=True))
    with open(OUT, "a", encoding="utf-8") as out:
        out.write(f"{item.nodeid}\t{wall:.3f}\t{own:.3f}\t{kids:.3f}\n")


Row = tuple[str, float, float, float]  # node id, wall, own CPU, children's CPU


def read(path: Path) -> list[Row]:
    rows = []
    for line in path.read_text("utf-8").splitlines():
        node, wall, own, kids = line.split("\t")
        rows.append((node, float(wall), float(own), float(kids)))
    return rows


def per_file(rows: list[Row]) -> dict[str, tuple[float, float]]:
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for node, wall, own, kids in rows:
        if node.startswith("fixture:"):
            continue
        files[node.split("::")[0]][0] += wall
        files[node.split("::")[0]][1] += own + kids
    return {name: (w, c) for name, (w, c) in files.items()}


def fixtures(rows: list[Row]) -> dict[str, tuple[int, float]]:
    """Per fixture (name and scope): its set-ups and their own CPU together."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for node, _, own, kids in rows:
        if node.startswith("fixture:"):
            out[node.removeprefix("fixture:")][0] += 1
            out[node.removeprefix("fixture:")][1] += own + kids
    return {name: (int(n), cpu) for name, (n, cpu) in out.items()}


def report(everything: list[Row], top: int = 15) -> None:
    rows = [r for r in everything if not r[0].startswith("fixture:")]
    wall = sum(r[1] for r in rows)
    own, kids = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{len(rows)} tests: wall {wall:.1f} s, CPU {own + kids:.1f} s ({own:.1f} own, "
          f"{kids:.1f} waited children), idle {wall - own - kids:.1f} s")  # fmt: skip
    for title, key in (
        ("wall", lambda r: r[1]),
        ("CPU", lambda r: r[2] + r[3]),
        ("idle (wall - CPU)", lambda r: r[1] - r[2] - r[3]),
    ):
        print(f"\ntop {top} by {title}:  wall    CPU")
        for node, w, o, k in sorted(rows, key=key, reverse=True)[:top]:
            print(f"  {w:6.2f} {o + k:6.2f}  {node}")
    print(f"\nfiles by CPU (top {top}):  wall    CPU")
    for name, (w, c) in sorted(per_file(rows).items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {w:6.1f} {c:6.1f}  {name}")
    print(f"\nfixtures by their own set-up CPU (top {top}, counted in their tests):  set-ups  CPU")
    for name, (n, c) in sorted(fixtures(everything).items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {n:6d} {c:6.1f}  {name}")


def compare(first: list[Row], second: list[Row], top: int = 20) -> None:
    a, b = per_file(first), per_file(second)
    print("\nper file, second minus first (wall, CPU), largest CPU change first:")
    names = sorted(set(a) | set(b), key=lambda n: -abs(b.get(n, (0, 0))[1] - a.get(n, (0, 0))[1]))
    for name in names[:top]:
        (wa, ca), (wb, cb) = a.get(name, (0.0, 0.0)), b.get(name, (0.0, 0.0))
        print(f"  {wa:6.1f} -> {wb:6.1f}  CPU {ca:6.1f} -> {cb:6.1f} ({cb - ca:+.1f})  {name}")


if __name__ == "__main__":
    runs = [read(Path(p)) for p in sys.argv[1:3]]
    if not runs:
        sys.exit(__doc__)
    for rows in runs:
        report(rows)
    if len(runs) == 2:
        compare(*runs)
