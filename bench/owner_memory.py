"""The daemon's resident memory as notes grow, through the real doors: a ``kioku serve``
(the stdio proxy, which starts the owner daemon) takes ``add_note`` calls as an editor
sends them; the owner's memory is read from ``/proc/<pid>/smaps_rollup`` at open (after
the first search, so the model is loaded), after each step of notes once every one is
embedded (``kioku status``'s backlog at zero), and after searches.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/owner_memory.py \
        [--notes 2000] [--step 1000] [--searches 300] [--src DIR] [--env KEY=VALUE ...] \
        [--rest S]

Notes are written from the quality set's memories, each repeated with a varying suffix
(no two texts equal). Printed per stage, in MB: Rss, Pss, Anonymous (the process's own
memory) and Rss less Anonymous (mapped files: the model, the index's segments, shared
libraries; shared and reclaimable by the kernel), and the growth per 1,000 notes.
``--src``: run another source tree (``git archive REV | tar -x -C DIR``) with this venv;
``--env``: settings for the owner (``KIOKU_EMBEDDER__CHANNELS='["use"]'``); ``--rest``:
seconds without calls before each reading after notes or searches (an owner gives freed
heap pages back once its work stops: ``common.heap``).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import json
import os
import shutil
import tempfile
import time

from harness import Client, Reply, serve_env, status, stop_owner, wait_settled

ROOT = _HERE.parent
DATA = ROOT / "bench" / "quality" / "data"
TYPES = {"lesson", "conclusion", "knowledge", "note"}


def texts(n: int) -> list[tuple[str, str]]:
    memories = [json.loads(line) for line in (DATA / "memories.jsonl").open(encoding="utf-8")]
    out = []
    for i in range(n):
        m = memories[i % len(memories)]
        kind = m.get("type") if m.get("type") in TYPES else "knowledge"
        out.append((f"{m['text']} (copy {i // len(memories)})", kind))
    return out


def smaps(pid: int) -> dict[str, int]:
    """The process's memory from smaps_rollup, in MB."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0]) // 1024
    return {
        "rss": values["Rss"],
        "pss": values["Pss"],
        "anon": values["Anonymous"],
        "file": values["Rss"] - values["Anonymous"],
    }


def mappings(pid: int, data: Path) -> dict[str, int]:
    """Resident MB per kind of mapping (the index's files by what they hold, the model,
    shared libraries, the heap, other anonymous memory), from ``/proc/<pid>/smaps``."""
    out: dict[str, int] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
            name = _kind(head[5] if len(head) > 5 else "", data)
        elif line.startswith("Rss:"):
            out[name] = out.get(name, 0) + int(line.split()[1])
    return {k: v // 1024 for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 1024}


def _kind(path: str, data: Path) -> str:
    if not path:
        return "anonymous"
    if path.startswith("["):
        return path
    if path.startswith(str(data)):
        rest = Path(path).relative_to(data).parts
        if "wal" in rest:
            return "index: wal"
        if "segments" in rest:
            return "index: " + "/".join(rest[rest.index("segments") + 2 :][:1])
        return "data: " + rest[-1]
    if ".so" in path:
        return "shared libraries"
    return "file: " + Path(path).name


def wait_all(session: Client, pending: list[Reply]) -> None:
    """Every reply of ``pending`` (then emptied)."""
    for reply in pending:
        session.wait(reply)
    pending.clear()


def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="kioku-owner-memory-"))
    env = serve_env(root / "data", args.src.resolve() if args.src else ROOT, args.env)
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    load = [os.getloadavg()[0]]
    rows: list[tuple[str, dict[str, int]]] = []
    session: Client | None = None
    pid = 0
    try:
        session = Client(env, "owner-memory-bench", start_timeout=300)
        session.wait(session.tool("search_memory", {"query": "deploy keys rotation"}))
        pid = int(status(env)["owner"]["pid"])
        time.sleep(2)
        rows.append(("open (after one search)", smaps(pid)))
        print(rows[-1], flush=True)
        todo = texts(args.notes)
        for start in range(0, len(todo), args.step):
            began = time.monotonic()
            pending: list[Reply] = []
            for text, kind in todo[start : start + args.step]:
                pending.append(session.tool("add_note", {"text": text, "type": kind}))
                if len(pending) >= 16:
                    wait_all(session, pending)
            wait_all(session, pending)
            added = time.monotonic() - began
            done = start + len(todo[start : start + args.step])
            waited = wait_settled(env, done)
            time.sleep(args.rest)
            rows.append((f"{done} notes embedded", smaps(pid)))
            index = status(env)["index"]
            print(
                f"{rows[-1]} (added in {added:.0f} s, settled {waited:.0f} s later; "
                f"{index['collection']}, {index.get('sealed_points', 0)} of "
                f"{index['points']} points sealed)",
                flush=True,
            )
            if args.mappings:
                print("   ", mappings(pid, root / "data"), flush=True)
        for q in queries[: args.searches]:
            session.wait(session.tool("search_memory", {"query": q}))
        time.sleep(args.rest)
        rows.append((f"after {args.searches} searches", smaps(pid)))
        print(rows[-1], flush=True)
        if args.mappings:
            print("   ", mappings(pid, root / "data"), flush=True)
    finally:
        if session is not None:
            session.close()
        if pid:
            stop_owner(pid)
        if args.keep:
            shutil.move(str(root / "data"), str(args.keep))
        shutil.rmtree(root, ignore_errors=True)
    load.append(os.getloadavg()[0])
    print(f"\nload {load[0]:.1f} before, {load[1]:.1f} after; MB")
    print("| stage | Rss | Pss | anonymous | files |\n|---|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m['rss']} | {m['pss']} | {m['anon']} | {m['file']} |")
    opened = rows[0][1]
    notes = [(int(n.split()[0]), m) for n, m in rows if n.endswith("embedded")]
    if notes:
        n, last = notes[-1]
        for key in ("rss", "anon"):
            print(f"{key} growth per 1,000 notes: {(last[key] - opened[key]) / (n / 1000):.1f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--step", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--src", type=Path, default=None)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--rest", type=float, default=0.0, help="seconds idle before a reading")
    parser.add_argument("--keep", type=Path, default=None, help="keep the data dir here")
    parser.add_argument("--mappings", action="store_true", help="print smaps per mapping kind")
    main(parser.parse_args())
