"""A burst of ``add_note`` calls over MCP, as an assistant sends them (issue 34's target:
semantically searchable p95 <= 3 s after each ack, every channel settled <= 60 s).

A real ``kioku serve`` (the stdio proxy an editor starts; it starts the owner daemon) in
a fresh data dir takes ``--notes`` ``add_note`` calls from one client, raw JSON-RPC
lines: ``--inflight 1`` sends the next add once the last is acknowledged (an assistant
calling one tool at a time), ``--inflight 4`` keeps four outstanding; ``--rate R`` sends
at most R a second (the add rate moves with the machine's load, and a slower burst
queues less: an A/B at one fixed rate compares what the code does with the same input).
The notes are the quality sets' memories (``bench/ingest.py --real``'s texts) with their own types.

When a note is semantically searchable is read from outside the owner: the owner marks a
note (``notes.embedded_model``) in the same pass that upserts its dense vector into the
index, right after the upsert (``indexing/applier.py``), so a read-only SQLite connection
polled every ``--poll-ms`` sees each note's first dense vector (a draft or the exact one)
applied, without asking the owner anything. Lag = seen - ack (the reply's arrival), so it
overstates by up to one poll. Settled: every live note marked, no draft left, and every
embedding model the owner's ``kioku status`` lists (each channel) holding a vector for
every note. Beside the wall-clock lag, the lag in kioku's CPU seconds (the owner's and the
two proxies', from ``/proc``, sampled at each poll): on a shared machine the owner gets a
varying share of the cores, which stretches the wall-clock lag of one run and not the
other's; the CPU-seconds lag moves much less with it, and halved it estimates the lag on
two free cores (an estimate, not a measurement).

The owner's own figures beside them (``kioku status``'s ``searchable_after_ack``, rolling
over its last 1,000 notes, ``index/ack_lags.py``): from each ack as the owner sent it to
the note's static vector in the fast pool ("fast vector after ack", only with
``search.fast_first`` on) and to its first e5 vector in the index.

A second session (another editor) sends new-query ``search_memory`` calls (real
questions, never repeated) every ``--search-gap-ms`` from the first add until every note
is searchable (at most ``--queries``), and as many again once settled; client-side ms.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/burst_mcp.py [--notes 1000]
        [--inflight 1 4] [--src base=BASE_CHECKOUT --src new=.] [--repeat 1]

``--src NAME=DIR`` runs that source tree (``PYTHONPATH``, this venv); several are run
interleaved, the same texts each, for side-by-side ratios. ``--env KEY=VALUE``: settings
for every owner (``KIOKU_EMBEDDER__DOCUMENT_NICE=0``); ``--src-env NAME:KEY=VALUE``: for
that source's owners only (``--src off=. --src-env off:KIOKU_SEARCH__PREFETCH_BUDGET_MS=0``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import bisect
import json
import os
import random
import shutil
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness import Client, Reply, pct, serve_env, status, stop_owner

from mcp_gateway.embedders.static import StaticEmbedder

ROOT = _HERE.parent
QUALITY = _HERE / "quality"
NOTE_TYPES = {"lesson", "conclusion", "knowledge", "profile", "note", "checkpoint"}


def memories(n: int) -> list[dict[str, str]]:
    """``ingest.py --real``'s texts (both quality sets, shuffled with its seed, numbered
    copies past their 2,135), each with its memory's type (records become knowledge)."""
    found: list[dict[str, Any]] = []
    for name in ("data", "conv"):
        with open(QUALITY / name / "memories.jsonl", encoding="utf-8") as f:
            found += [json.loads(line) for line in f if line.strip()]
    random.Random(7).shuffle(found)
    out = []
    for i in range(n):
        m = found[i % len(found)]
        text = m["text"] + (f" ({i // len(found)})" if i >= len(found) else "")
        kind = m.get("type") if m.get("type") in NOTE_TYPES else "knowledge"
        out.append({"text": text, "type": kind, "domain": m.get("domain", "")})
    return out


def questions() -> list[str]:
    """Real questions of both sets (not the one-word triggers), shuffled."""
    out: list[str] = []
    for name in ("conv", "data"):
        with open(QUALITY / name / "queries.jsonl", encoding="utf-8") as f:
            out += [json.loads(line)["query"] for line in f if line.strip()]
    out = [q for q in dict.fromkeys(out) if len(q) >= 25]
    random.Random(11).shuffle(out)
    return out


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Watch(threading.Thread):
    """Polls the truth store read-only: when each note was first seen marked as having
    its dense vector in the index, and when everything settled."""

    def __init__(self, db: Path, models: list[str], poll_s: float, pids: list[int]) -> None:
        super().__init__(daemon=True, name="watch")
        self.db, self.models, self.poll_s, self.pids = db, models, poll_s, pids
        self.seen: dict[str, float] = {}
        # (time, CPU seconds of the owner and the proxies) at each poll
        self.cpu: list[tuple[float, float]] = []
        self.settled_at = 0.0
        self.expected = 0  # notes acknowledged so far (set by the adder)
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        try:
            while not self.stop.is_set():
                self._poll(conn)
                self.stop.wait(self.poll_s)
        finally:
            conn.close()

    def _poll(self, conn: sqlite3.Connection) -> None:
        now = time.perf_counter()
        self.cpu.append((now, sum(cpu_s(pid) for pid in self.pids)))
        try:
            marked = conn.execute(
                "SELECT id FROM notes WHERE embedded_model IS NOT NULL AND deleted = 0"
            ).fetchall()
            for (nid,) in marked:
                self.seen.setdefault(nid, now)
            if self.settled_at or not self.expected or len(marked) < self.expected:
                return
            (drafts,) = conn.execute("SELECT COUNT(*) FROM vectors WHERE draft = 1").fetchone()
            counts = dict(
                conn.execute(
                    "SELECT model, COUNT(*) FROM vectors WHERE kind = 'note' GROUP BY model"
                ).fetchall()
            )
        except sqlite3.OperationalError:  # a checkpoint or the schema being made: next poll
            return
        if not drafts and all(counts.get(m, 0) >= self.expected for m in self.models):
            self.settled_at = now


@dataclass
class Run:
    label: str
    inflight: int
    load: tuple[float, float] = (0.0, 0.0)
    acks: list[float] = field(default_factory=list)  # ms
    lags: list[float] = field(default_factory=list)  # s
    first_add: float = 0.0
    last_ack: float = 0.0
    all_searchable: float = 0.0
    settled: float = 0.0
    by: dict[str, int] = field(default_factory=dict)
    during: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    owner_cpu: float = 0.0  # first add to settled and the searches after
    cpu_searchable: float = 0.0  # first add to the last note searchable
    # kioku's CPU seconds (owner and proxies) from each ack to its note searchable: the
    # lag in work done, which a busier machine stretches less than the wall-clock lag
    cpu_lags: list[float] = field(default_factory=list)
    jobs: dict[str, Any] = field(default_factory=dict)
    # the owner's resident memory (MB): at the first add, its peak, and once settled
    # (after the settled searches)
    rss: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # notes with a static vector (a piece in e5's static table, any script): pooled from
    # the ack where search.fast_first is on (the write-behind every search waits for
    # pools them; search/fast_first.py)
    latin: int = 0
    # the owner's own figures (``kioku status``'s ``searchable_after_ack``): from each
    # note's ack (as the owner sent it) to its static vector in the fast pool (absent
    # with search.fast_first off) and to its first e5 vector in the index
    after_ack: dict[str, Any] = field(default_factory=dict)
    # each add's JSON-RPC id, sent and reply-read times (perf_counter: CLOCK_MONOTONIC,
    # the clock the owner's own timestamps use)
    sent_at: list[tuple[int, float, float]] = field(default_factory=list)


def memory_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process, MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def burst(args: argparse.Namespace, label: str, src: Path, inflight: int, asks: list[str]) -> Run:
    run = Run(label, inflight)
    root = Path(tempfile.mkdtemp(prefix="kioku-burst-mcp-"))
    own = [e.partition(":")[2] for e in args.src_env if e.startswith(label + ":")]
    env = serve_env(root / "data", src, args.env + own)
    notes = memories(args.notes)
    adder = searcher = None
    pid = 0
    try:
        adder, searcher = Client(env, "burst-bench-adds"), Client(env, "burst-bench-searches")
        searcher.wait(searcher.tool("search_memory", {"query": "how do we deploy on fridays"}))
        info = status(env)
        pid = int(info["owner"]["pid"])
        models = [b["model"] for b in info.get("backlog") or []] or [info["embedder"]]
        pids = [pid, adder.proc.pid, searcher.proc.pid]
        watch = Watch(root / "data" / "kioku.sqlite3", models, args.poll_ms / 1000, pids)
        time.sleep(1.0)  # the owner's start-up work (reconcile at start) out of the way
        run.load = (os.getloadavg()[0], 0.0)
        cpu0 = cpu_s(pid)
        rss0 = memory_mb(pid)["VmRSS"]
        watch.start()
        window = threading.Semaphore(inflight)
        adder.on_reply = lambda _reply: window.release()
        replies: list[Reply] = []
        done_adding = threading.Event()

        def search_during() -> None:
            for q in asks[: args.queries]:
                if done_adding.is_set() and len(watch.seen) >= args.notes:
                    return
                reply = searcher.tool("search_memory", {"query": q})
                searcher.wait(reply)
                run.during.append((reply.at - reply.sent) * 1000)
                time.sleep(args.search_gap_ms / 1000)

        searching = threading.Thread(target=search_during, daemon=True)
        run.first_add = time.perf_counter()
        searching.start()
        for i, note in enumerate(notes):
            window.acquire()
            if args.rate:  # a fixed pace: runs compared at the same add rate
                time.sleep(max(0.0, run.first_add + i / args.rate - time.perf_counter()))
            replies.append(adder.tool("add_note", note))
        for reply in replies:
            adder.wait(reply)
        done_adding.set()
        acked = {r.message["result"]["structuredContent"]["id"]: r.at for r in replies}
        run.last_ack = max(acked.values())
        run.acks = [(r.at - r.sent) * 1000 for r in replies]
        run.sent_at = [(r.message["id"], r.sent, r.at) for r in replies]
        watch.expected = len(acked)
        deadline = time.perf_counter() + args.settle_limit
        while not watch.settled_at and time.perf_counter() < deadline:
            time.sleep(0.1)
        watch.stop.set()
        watch.join()
        searching.join()
        run.owner_cpu = cpu_s(pid) - cpu0
        times, spent = zip(*watch.cpu, strict=True)

        def cpu_at(t: float) -> float:
            return spent[max(0, bisect.bisect_right(times, t) - 1)]

        run.cpu_lags = [
            cpu_at(watch.seen[n]) - cpu_at(t) for n, t in acked.items() if n in watch.seen
        ]
        run.cpu_searchable = cpu_at(max(watch.seen.values())) - cpu_at(run.first_add)
        missing = [nid for nid in acked if nid not in watch.seen]
        if missing:
            print(f"  {len(missing)} notes never seen searchable in {args.settle_limit:.0f} s")
        run.lags = [watch.seen[nid] - t for nid, t in acked.items() if nid in watch.seen]
        run.all_searchable = max(watch.seen.values()) - run.first_add if not missing else 0.0
        run.settled = watch.settled_at - run.first_add if watch.settled_at else 0.0
        run.by = {
            f"+{d:g} s": sum(1 for nid in acked if watch.seen.get(nid, 1e18) <= run.last_ack + d)
            for d in (0, 2, 5, 10)
        }
        settled_status = status(env)
        run.jobs = settled_status.get("jobs", {})
        run.after_ack = settled_status.get("searchable_after_ack") or {}
        for q in asks[args.queries : 2 * args.queries]:  # the same kind once nothing embeds
            reply = searcher.tool("search_memory", {"query": q})
            searcher.wait(reply)
            run.after.append((reply.at - reply.sent) * 1000)
            time.sleep(args.search_gap_ms / 1000)
        run.load = (run.load[0], os.getloadavg()[0])
        mem = memory_mb(pid)
        run.rss = (rss0, mem["VmHWM"], mem["VmRSS"])
        table = StaticEmbedder.packaged()
        run.latin = sum(1 for n in notes if len(table.pieces(n["text"])))
    finally:
        for client in (adder, searcher):
            if client is not None:
                client.close()
        if pid:
            stop_owner(pid)
        shutil.rmtree(root, ignore_errors=True)
    return run


def report(run: Run, notes: int) -> None:
    adds_s = run.last_ack - run.first_add
    lag = [x for x in run.lags]
    print(
        f"{run.label}, {run.inflight} in flight (load {run.load[0]:.1f} -> {run.load[1]:.1f}): "
        f"{notes} adds in {adds_s:.1f} s ({notes / adds_s:.0f}/s), ack p50 "
        f"{pct(run.acks, 0.5):.1f} ms p95 {pct(run.acks, 0.95):.1f} ms; ack -> searchable "
        f"p50 {pct(lag, 0.5):.2f} s p95 {pct(lag, 0.95):.2f} s p99 {pct(lag, 0.99):.2f} s "
        f"max {max(lag, default=float('nan')):.2f} s; all searchable {run.all_searchable:.1f} s "
        f"after the first add; settled {run.settled:.1f} s; searchable after the last ack: "
        + ", ".join(f"{k} {v}" for k, v in run.by.items())
        + f"; search during p50 {pct(run.during, 0.5):.1f} p95 {pct(run.during, 0.95):.1f} ms "
        f"(n={len(run.during)}), settled p50 {pct(run.after, 0.5):.1f} p95 "
        f"{pct(run.after, 0.95):.1f} ms; owner CPU {run.owner_cpu:.1f} s; kioku CPU to "
        f"searchable {run.cpu_searchable:.1f} s, CPU-seconds from ack to searchable p50 "
        f"{pct(run.cpu_lags, 0.5):.2f} p95 {pct(run.cpu_lags, 0.95):.2f}; owner MB at the "
        f"first add {run.rss[0]:.0f}, peak {run.rss[1]:.0f}, settled {run.rss[2]:.0f}; "
        f"{run.latin} notes with a static vector; fast vector after ack "
        f"{owner_lag(run, 'fast', 1000, 'ms')}; first e5 vector after ack "
        f"{owner_lag(run, 'first_e5', 1, 's')} (owner); jobs "
        f"{ {k: run.jobs.get(k) for k in ('batches', 'embedder_calls', 'drafted')} }",
        flush=True,
    )


def owner_lag(run: Run, key: str, scale: float, unit: str) -> str:
    """The owner's p50 / p95 / p99 of ``key`` (``fast``, ``first_e5``) and its count,
    "-" where it has none (the fast vector with search.fast_first off)."""
    q = run.after_ack.get(key)
    if not q:
        return "-"
    digits = 1 if unit == "ms" else 2
    return (
        " / ".join(f"{q[k] * scale:.{digits}f}" for k in ("p50_s", "p95_s", "p99_s"))
        + f" {unit} (n={q['count']})"
    )


def table(runs: list[Run]) -> None:
    print(
        "\n| run | in flight | load | adds/s | ack p50 / p95 ms | fast vector after ack "
        "p50 / p95 / p99 (owner) | first e5 vector after ack p50 / p95 / p99 s (store) "
        "| all searchable s | settled s | search during p50 / p95 ms | settled p50 / p95 ms "
        "| owner CPU s | kioku CPU-s ack -> searchable p50 / p95 | owner MB first add / peak "
        "/ settled |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in runs:
        adds = len(r.acks) / max(1e-9, r.last_ack - r.first_add)
        print(
            f"| {r.label} | {r.inflight} | {r.load[0]:.1f}-{r.load[1]:.1f} | {adds:.0f} | "
            f"{pct(r.acks, 0.5):.1f} / {pct(r.acks, 0.95):.1f} | "
            f"{owner_lag(r, 'fast', 1000, 'ms')} | {pct(r.lags, 0.5):.2f} / "
            f"{pct(r.lags, 0.95):.2f} / {pct(r.lags, 0.99):.2f} | {r.all_searchable:.1f} | "
            f"{r.settled:.1f} | {pct(r.during, 0.5):.1f} / {pct(r.during, 0.95):.1f} | "
            f"{pct(r.after, 0.5):.1f} / {pct(r.after, 0.95):.1f} | {r.owner_cpu:.1f} | "
            f"{pct(r.cpu_lags, 0.5):.2f} / {pct(r.cpu_lags, 0.95):.2f} | "
            f"{r.rss[0]:.0f} / {r.rss[1]:.0f} / {r.rss[2]:.0f} |"
        )


def main(args: argparse.Namespace) -> None:
    sources = [s.partition("=") for s in args.src] or [("this", "=", str(ROOT))]
    asks = questions()
    need = 2 * args.queries
    print(f"load {os.getloadavg()[0]:.1f}; {len(asks)} questions, {need} a run", flush=True)
    runs: list[Run] = []
    for rep in range(args.repeat):
        for inflight in args.inflight:
            for name, _, path in sources:
                chosen = asks[(rep * need) % len(asks) :] + asks
                run = burst(args, name, Path(path).resolve(), inflight, chosen[:need])
                report(run, args.notes)
                runs.append(run)
    table(runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--inflight", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--src", action="append", default=[], help="NAME=DIR, repeatable")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rate", type=float, default=0.0, help="adds/s at most (0: no cap)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--search-gap-ms", type=float, default=200.0)
    parser.add_argument("--poll-ms", type=float, default=50.0)
    parser.add_argument("--settle-limit", type=float, default=300.0)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every run")
    parser.add_argument("--src-env", action="append", default=[], help="NAME:KEY=VALUE")
    main(parser.parse_args())
