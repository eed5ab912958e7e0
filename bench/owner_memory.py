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

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any

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


class Session:
    """A ``kioku serve`` spoken to with raw JSON-RPC lines."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_gateway.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        self.next_id = 1
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def replies(self, want: set[int], timeout: float = 300.0) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while want:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no reply to {sorted(want)[:5]} in time")
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise RuntimeError("kioku serve closed its stdout")
            self.buffer += chunk
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                if "error" in message or message.get("result", {}).get("isError"):
                    raise RuntimeError(f"error reply: {message}")
                want.discard(message.get("id"))

    def call(self, tool: str, arguments: dict[str, Any]) -> int:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def owner(env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "mcp_gateway.cli", "status", "--json"],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    data = json.loads(out.stdout)
    return int(data["owner"]["pid"]), data


def settle(env: dict[str, str], want: int) -> float:
    began = time.monotonic()
    while True:
        _, data = owner(env)
        backlog = data.get("backlog") or []
        left = sum(int(b["waiting"]) + int(b["drafts"]) for b in backlog)
        index = data["index"]
        if not left and data["notes"]["total"] >= want and index["points"] >= want:
            return time.monotonic() - began
        time.sleep(3)


def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="kioku-owner-memory-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env.update(KIOKU_DATA_DIR=str(root / "data"), KIOKU_LOG_LEVEL="WARNING")
    env["PYTHONPATH"] = str(args.src.resolve() if args.src else ROOT)
    for pair in args.env:
        key, _, value = pair.partition("=")
        env[key] = value
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    load = [os.getloadavg()[0]]
    rows: list[tuple[str, dict[str, int]]] = []
    session = Session(env)
    pid = 0
    try:
        init = session.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "owner-memory-bench", "version": "0"},
            },
        )
        session.replies({init})
        session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        session.replies({session.call("search_memory", {"query": "deploy keys rotation"})})
        pid, _ = owner(env)
        time.sleep(2)
        rows.append(("open (after one search)", smaps(pid)))
        print(rows[-1], flush=True)
        todo = texts(args.notes)
        for start in range(0, len(todo), args.step):
            began = time.monotonic()
            pending: set[int] = set()
            for text, kind in todo[start : start + args.step]:
                pending.add(session.call("add_note", {"text": text, "type": kind}))
                if len(pending) >= 16:
                    session.replies(pending)
            session.replies(pending)
            added = time.monotonic() - began
            done = start + len(todo[start : start + args.step])
            waited = settle(env, done)
            time.sleep(args.rest)
            rows.append((f"{done} notes embedded", smaps(pid)))
            print(f"{rows[-1]} (added in {added:.0f} s, settled {waited:.0f} s later)", flush=True)
            if args.mappings:
                print("   ", mappings(pid, root / "data"), flush=True)
        for q in queries[: args.searches]:
            session.replies({session.call("search_memory", {"query": q})})
        time.sleep(args.rest)
        rows.append((f"after {args.searches} searches", smaps(pid)))
        print(rows[-1], flush=True)
        if args.mappings:
            print("   ", mappings(pid, root / "data"), flush=True)
    finally:
        session.close()
        if pid:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
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
