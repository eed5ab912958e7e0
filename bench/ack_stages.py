"""Where an ``add_note``'s ack time goes in a burst over MCP, stage by stage, for
several owner settings interleaved (``search.fast_first`` on against off).

Runs ``burst_mcp.burst`` (a real ``kioku serve`` proxy and owner, ``--inflight 1``) with
``bench/ack_stages_hook`` first on the processes' ``PYTHONPATH``: its ``sitecustomize``
(active only with ``BENCH_ACK_STAGES`` set, which only this bench sets) wraps a few
methods of the proxy and the owner to timestamp each add as it crosses them; the
product code has no instrumentation. Every timestamp is CLOCK_MONOTONIC
(``time.perf_counter``), the client's clock too, so the stages of one add line up across
the three processes. Stages, per add (JSON-RPC id):

    client write -> proxy read (its stdin line)          client->proxy
    proxy read -> its socket write returned              proxy fwd
    -> owner's line read (session socket)                ->owner read
    -> NoteService.add entered (parse, validate, MCP)    dispatch
    -> NoteStore.add_or_existing entered                 pre-commit
    -> it returned (truth-store commit)                  commit
    -> NoteService.add returned (activity log)           post-commit
    -> the reply's socket send entered (serialise)       to reply
    -> send returned                                     send
    -> proxy's line read from the socket                 ->proxy
    -> client's read of the reply                        proxy->client

and, per add, the owner's event-loop thread CPU from its line read to its reply sent
(``time.thread_time``: CPU, not wall: a stage that grows in wall but not in CPU waited
for the interpreter or a core), the owner's whole-process CPU in the same window (the
other threads': the fast vector, onnxruntime), whether the fast vector's thread ran
during the window, and the follow-ups: the lexical point, the fast hop, its thread's
CPU, pooled.

The owner's loop thread is also split by the kernel's schedstat: on a CPU, waiting in a
run queue (for a core), asleep (the interpreter lock, a worker's hop, I/O); and each
run's owner CPU per add by thread over the burst (the loop; the rest: e5's lanes, the
store's and the sparse vectors' workers, the fast vector). A run stops waiting for e5
``--settle-limit`` s after its last ack: the figures are the burst's.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" nice -n 5 python bench/ack_stages.py --notes 1000
        --repeat 3 --variant on:KIOKU_SEARCH__FAST_FIRST=true
        --variant off:KIOKU_SEARCH__FAST_FIRST=false
        [--variant on-hold:KIOKU_SEARCH__FAST_FIRST=true,BENCH_ACK_HOLD_E5=1]

A variant's settings are ``KEY=VALUE`` pairs joined by commas (any environment
variable: the hook's diagnostics, ``MALLOC_ARENA_MAX``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import csv
import os
import shutil
import statistics
import tempfile
from collections import defaultdict

import burst_mcp

HOOK = _HERE / "ack_stages_hook"
DOORS = [
    ("client->proxy", "sent", "proxy_in"),
    ("proxy fwd", "proxy_in", "proxy_in_sent"),
    ("->owner read", "proxy_in_sent", "owner_read"),
    ("dispatch", "owner_read", "add_start"),
    ("pre-commit", "add_start", "commit_start"),
    ("commit", "commit_start", "commit_end"),
    ("  hop to worker", "commit_start", "tx_enter"),
    ("  lock+BEGIN", "tx_enter", "tx_locked"),
    ("  SQL+COMMIT", "tx_locked", "tx_exit"),
    ("  hop back", "tx_exit", "commit_end"),
    ("post-commit", "commit_end", "add_end"),
    ("to reply", "add_end", "owner_write"),
    ("send", "owner_write", "owner_written"),
    ("send->proxy read", "owner_write", "proxy_out"),
    ("proxy->client", "proxy_out", "at"),
    ("owner read->written", "owner_read", "owner_written"),
    ("ack (client)", "sent", "at"),
]


def read_rows(folder: Path) -> list[list[str]]:
    """Every process's rows; the owner's ``task`` rows get its pid (``owner:PID``)."""
    rows: list[list[str]] = []
    for f in folder.glob("*.tsv"):
        with open(f, encoding="utf-8") as fh:
            mine = list(csv.reader(fh, delimiter="\t"))
        if any(r[0] == "start:owner" for r in mine):
            mine.append(["owner", f.stem, "0", "0", "0", "0"])
        rows += mine
    return rows


def threads_cpu(rows: list[list[str]]) -> dict[str, list[float]]:
    """The owner's CPU per add (ms) from the 20th add's snapshot to the last one, by
    thread: the event loop (the main thread), the niced ones (e5's document lane),
    the rest (anyio's workers: the store's hops, the sparse vectors, the fast vector)."""
    pid = next((r[1] for r in rows if r[0] == "owner"), "")
    snaps: dict[int, dict[str, tuple[float, float, int]]] = defaultdict(dict)
    for kind, key, wall, cpu, _, _ in rows:
        if kind == "task":
            adds, tid, nice = key.split(":")
            snaps[int(adds)][tid] = (float(wall), float(cpu), int(nice))
    if len(snaps) < 2:
        return {}
    first, last = snaps[min(snaps)], snaps[max(snaps)]
    adds = max(snaps) - min(snaps)
    out: dict[str, float] = defaultdict(float)
    for tid, (_, cpu, nice) in last.items():
        group = "loop" if tid == pid else ("niced" if nice > 0 else "workers")
        out[group] += cpu - first.get(tid, (0.0, 0.0, 0))[1]
    wall = next(iter(last.values()))[0] - next(iter(first.values()))[0]
    res = {f"owner CPU/add, {k}": [v * 1000 / adds] for k, v in out.items()}
    res["owner wall/add (burst)"] = [wall * 1000 / adds]
    return res


def stages(run: burst_mcp.Run, rows: list[list[str]], skip: int) -> dict[str, list[float]]:
    """Per-stage ms lists over the run's adds (the first ``skip`` left out)."""
    at: dict[str, dict[str, tuple[float, float, float, str]]] = defaultdict(dict)
    notes: dict[str, str] = {}  # note id -> rpc
    threads: list[tuple[float, float, float]] = []  # fast thread (start, end, cpu s)
    open_start: dict[str, tuple[float, float]] = {}
    by_note: dict[str, dict[str, float]] = defaultdict(dict)
    for kind, key, wall, tcpu, pcpu, tid in rows:
        w, t, p = float(wall), float(tcpu), float(pcpu)
        if kind.startswith("note_of:"):
            notes[kind.split(":", 1)[1]] = key
        elif kind == "fast_thread_start":
            open_start[tid] = (w, t)
        elif kind == "fast_thread_end" and tid in open_start:
            w0, t0 = open_start.pop(tid)
            threads.append((w0, w, t - t0))
        elif kind in ("lexical_start", "lexical_end", "fast_hop", "fast_pooled"):
            by_note[key][kind] = w
        else:
            at[key].setdefault(kind, (w, t, p, tid))
    threads.sort()
    out: dict[str, list[float]] = defaultdict(list)
    for rpc, sent, got in run.sent_at[skip:]:
        marks = at.get(str(rpc), {})
        wall = {k: v[0] for k, v in marks.items()}
        wall["sent"], wall["at"] = sent, got
        for name, a, b in DOORS:
            if a in wall and b in wall:
                out[name].append((wall[b] - wall[a]) * 1000)
        if "owner_read" in marks and "owner_written" in marks:
            r, w = marks["owner_read"], marks["owner_written"]
            out["loop CPU read->written"].append((w[1] - r[1]) * 1000)
            out["process CPU read->written"].append((w[2] - r[2]) * 1000)
            overlap = sum(max(0.0, min(e, w[0]) - max(s, r[0])) for s, e, _ in threads)
            out["fast thread overlap"].append(overlap * 1000)
            if "sched_read" in marks and "sched_written" in marks:
                a, b = marks["sched_read"], marks["sched_written"]
                on_cpu, queued = (b[1] - a[1]) * 1000, (b[2] - a[2]) * 1000
                out["loop: on a CPU read->written"].append(on_cpu)
                out["loop: in a run queue"].append(queued)
                out["loop: asleep (GIL, worker, I/O)"].append(
                    (b[0] - a[0]) * 1000 - on_cpu - queued
                )
            if "sched_tx_enter" in marks and "sched_tx_exit" in marks:
                a, b = marks["sched_tx_enter"], marks["sched_tx_exit"]
                on_cpu, queued = (b[1] - a[1]) * 1000, (b[2] - a[2]) * 1000
                out["tx worker: on a CPU"].append(on_cpu)
                out["tx worker: in a run queue"].append(queued)
                out["tx worker: asleep (GIL, lock, I/O)"].append(
                    (b[0] - a[0]) * 1000 - on_cpu - queued
                )
            key = "ack, fast thread ran" if overlap > 0 else "ack, no fast thread"
            out[key].append((got - sent) * 1000)
    for nid, rpc in notes.items():
        marks = at.get(rpc, {})
        f = by_note.get(nid, {})
        if "owner_written" in marks and "lexical_start" in f:
            base = marks["owner_written"][0]
            out["written->lexical start"].append((f["lexical_start"] - base) * 1000)
            if "lexical_end" in f:
                out["lexical"].append((f["lexical_end"] - f["lexical_start"]) * 1000)
            if "fast_hop" in f:
                out["written->fast hop"].append((f["fast_hop"] - base) * 1000)
            if "fast_pooled" in f:
                out["written->fast pooled"].append((f["fast_pooled"] - base) * 1000)
    out["fast thread wall"] = [(e - s) * 1000 for s, e, _ in threads]
    out["fast thread CPU"] = [c * 1000 for _, _, c in threads]
    out.update(threads_cpu(rows))
    return out


def pct(values: list[float], q: float) -> float:
    return burst_mcp.pct(values, q)


def main(args: argparse.Namespace) -> None:
    variants = [v.partition(":") for v in args.variant]
    src = Path(args.src).resolve()
    runs: dict[str, list[dict[str, list[float]]]] = defaultdict(list)
    loads: dict[str, list[str]] = defaultdict(list)
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    for rep in range(args.repeat):
        for name, _, settings in variants:
            folder = Path(tempfile.mkdtemp(prefix="kioku-ack-stages-"))
            try:
                burst_args = argparse.Namespace(
                    notes=args.notes,
                    inflight=[1],
                    rate=0.0,
                    queries=args.queries,
                    search_gap_ms=200.0,
                    poll_ms=50.0,
                    settle_limit=args.settle_limit,
                    env=[
                        f"BENCH_ACK_STAGES={folder}",
                        f"PYTHONPATH={HOOK}{os.pathsep}{src}",
                        *[s for s in settings.split(",") if s],
                        *args.env,
                    ],
                    src_env=[],
                )
                chosen = burst_mcp.questions()[rep * 2 * args.queries :]
                run = burst_mcp.burst(burst_args, name, src, 1, chosen[: 2 * args.queries])
                burst_mcp.report(run, args.notes)
                found = stages(run, read_rows(folder), args.skip)
                runs[name].append(found)
                loads[name].append(f"{run.load[0]:.1f}-{run.load[1]:.1f}")
                print(
                    f"{name} rep {rep}: ack p50 {pct(found['ack (client)'], 0.5):.2f} ms, "
                    f"owner read->written p50 {pct(found['owner read->written'], 0.5):.2f} "
                    f"ms, stamped adds {len(found['owner read->written'])}",
                    flush=True,
                )
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    table(runs, loads, [v[0] for v in variants])


def table(
    runs: dict[str, list[dict[str, list[float]]]], loads: dict[str, list[str]], names: list[str]
) -> None:
    keys: list[str] = []
    for found in (f for n in names for f in runs[n]):
        keys += [k for k in found if k not in keys]
    print("\nloads: " + "; ".join(f"{n} {' '.join(loads[n])}" for n in names))
    head = " | ".join(f"{n} p50 (each run) | {n} p95 | {n} mean" for n in names)
    print(f"\n| stage, ms | {head} |")
    print("|---|" + "---|" * (3 * len(names)))
    for key in keys:
        cells = []
        for n in names:
            p50s = " ".join(f"{pct(f.get(key, []), 0.5):.3f}" for f in runs[n])
            allv = [x for f in runs[n] for x in f.get(key, [])]
            mean = statistics.fmean(allv) if allv else float("nan")
            cells.append(f"{p50s} | {pct(allv, 0.95):.3f} | {mean:.3f}")
        count = " ".join(str(len(f.get(key, []))) for n in names for f in runs[n])
        print(f"| {key} (n {count}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--skip", type=int, default=20, help="first adds left out (warm-up)")
    parser.add_argument("--src", default=str(_HERE.parent))
    parser.add_argument(
        "--settle-limit", type=float, default=2.0, help="s to wait for e5 after the burst"
    )
    parser.add_argument("--variant", action="append", default=[], help="NAME:KEY=VALUE[,KEY=VALUE]")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE, every run")
    main(parser.parse_args())
