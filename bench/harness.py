"""The steps most benches share: start kioku, add notes, wait until settled, search, time.

Two ways in, one set of steps:

- **in process** (``local``): ``open_app`` on a data dir, notes added through the
  server's own path (``add``), searches timed server side (``timed_searches``);
  ``watch_applied`` records when each note's first dense vector reached the index and
  ``settle`` waits until nothing is left to embed exactly.
- **through the real doors**: ``serve_env`` is the environment of a ``kioku serve``
  (this environment without its ``KIOKU_*`` settings, on one data dir, optionally
  another checkout's code); ``Client`` speaks raw JSON-RPC lines to one over stdio and
  timestamps each reply as it arrives; ``serve_params`` starts the same process for the
  MCP SDK's client; ``status``, ``stop_owner`` and ``stop_daemon`` ask after and end the
  owner daemon a run started.

The note templates the synthetic benches write from are data (``templates``, from
``bench/data/note_templates.json``). ``mcp_gateway`` is imported only inside the
in-process steps, so a bench that measures
another checkout over the doors never loads this checkout's code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import StdioServerParameters

    from mcp_gateway.services.app import AppContext

PROTOCOL = "2025-06-18"
SERVE = [sys.executable, "-m", "mcp_gateway.cli", "serve"]


def templates(bench: str) -> dict[str, list[str]]:
    """``bench``'s word lists (subjects, verbs, objects, ...), from ``data/note_templates.json``."""
    with open(Path(__file__).with_name("data") / "note_templates.json", encoding="utf-8") as f:
        found: dict[str, list[str]] = json.load(f)[bench]
    return found


def pct(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ``values``; NaN for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summary(ms: Sequence[float]) -> str:
    """``p50 / p95 / p99`` of ``ms`` on one line."""
    return f"p50 {pct(ms, 0.5):7.2f}  p95 {pct(ms, 0.95):7.2f}  p99 {pct(ms, 0.99):7.2f} ms"


# ---- through the doors --------------------------------------------------------------


def serve_env(
    data_dir: Path,
    src: Path | None = None,
    settings: Iterable[str] | Mapping[str, str] = (),
) -> dict[str, str]:
    """This environment without its ``KIOKU_*`` settings, on ``data_dir``, logging
    warnings only, running ``src``'s code (``PYTHONPATH``; none: whatever is installed),
    plus ``settings`` (a mapping, or ``KEY=VALUE`` strings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env.update(KIOKU_DATA_DIR=str(data_dir), KIOKU_LOG_LEVEL="WARNING")
    if src is not None:
        env["PYTHONPATH"] = str(src)
    if isinstance(settings, Mapping):
        env.update(settings)
    else:
        for pair in settings:
            key, _, value = pair.partition("=")
            env[key] = value
    return env


def serve_params(
    env: dict[str, str], src: Path | None = None, *, standalone: bool = False
) -> StdioServerParameters:
    """``kioku serve`` (``--standalone``: no owner daemon) for the MCP SDK's client.
    ``src`` is also the working directory: ``python -m`` puts it first on ``sys.path``,
    ahead of ``PYTHONPATH``."""
    from mcp import StdioServerParameters

    args = [*SERVE[1:], "--standalone"] if standalone else SERVE[1:]
    return StdioServerParameters(command=SERVE[0], args=args, env=env, cwd=src)


@dataclass
class Reply:
    """One request's reply: ``sent`` and ``at`` (arrival) on ``time.perf_counter``."""

    sent: float
    done: threading.Event = field(default_factory=threading.Event)
    at: float = 0.0
    message: dict[str, Any] = field(default_factory=dict)


class Client:
    """One ``kioku serve`` (an editor's MCP session) spoken to with raw JSON-RPC lines,
    initialised on creation (``name``: the client's name in the handshake). Several
    requests may be outstanding; a reader thread stamps each reply as it arrives."""

    def __init__(self, env: dict[str, str], name: str, start_timeout: float = 120.0) -> None:
        self.proc = subprocess.Popen(
            SERVE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        self._next = 0
        self._open: dict[int, Reply] = {}
        self._lock = threading.Lock()
        self.on_reply: Any = None
        threading.Thread(target=self._read, daemon=True, name=f"read-{name}").start()
        info = {"name": name, "version": "0"}
        init = self.send(
            "initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
        )
        self.wait(init, start_timeout)
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any]) -> Reply:
        with self._lock:
            self._next += 1
            rid = self._next
            reply = self._open[rid] = Reply(time.perf_counter())
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return reply

    def tool(self, name: str, arguments: dict[str, Any]) -> Reply:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def wait(self, reply: Reply, timeout: float = 300.0) -> dict[str, Any]:
        """The reply's message; ``RuntimeError`` for an error reply, none in time, or a
        server that closed its stdout."""
        if not reply.done.wait(timeout):
            raise RuntimeError("no reply in time")
        message = reply.message
        if "error" in message or message.get("result", {}).get("isError"):
            raise RuntimeError(f"error reply: {str(message)[:500]}")
        return message

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            at = time.perf_counter()
            message = json.loads(line)
            with self._lock:
                reply = self._open.pop(message.get("id"), None)
            if reply is None:
                continue
            reply.at, reply.message = at, message
            reply.done.set()
            if self.on_reply is not None:
                self.on_reply(reply)
        with self._lock:  # closed: no reply is coming to what is still open
            gone, self._open = list(self._open.values()), {}
        for reply in gone:
            reply.message = {"error": "kioku serve closed its stdout"}
            reply.done.set()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def status(env: dict[str, str]) -> dict[str, Any]:
    """``kioku status --json`` for the data dir of ``env`` (owner pid, backlog, index)."""
    out = subprocess.run(
        [sys.executable, "-m", "mcp_gateway.cli", "status", "--json"],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def stop_owner(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM to the owner daemon, then wait (at most ``timeout``) for it to be gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)


def stop_daemon(data_dir: Path, timeout: float = 60.0) -> None:
    """End the owner daemon of ``data_dir`` (its pid is in the lock file) and wait until
    it is gone: it may still be flushing its index into a directory about to be removed."""
    try:
        pid = int((data_dir / "gateway.lock").read_text().strip())
    except (OSError, ValueError):
        return
    stop_owner(pid, timeout)


def wait_settled(env: dict[str, str], notes: int, poll_s: float = 3.0) -> float:
    """Through the doors: poll ``kioku status`` until the owner of ``env``'s data dir
    holds at least ``notes`` notes and index points with nothing waiting or drafted;
    the seconds it took."""
    began = time.monotonic()
    while True:
        data = status(env)
        left = sum(int(b["waiting"]) + int(b["drafts"]) for b in data.get("backlog") or [])
        index = data["index"]
        if not left and data["notes"]["total"] >= notes and index["points"] >= notes:
            return time.monotonic() - began
        time.sleep(poll_s)


# ---- in process ---------------------------------------------------------------------


@asynccontextmanager
async def local(
    data_dir: Path | None = None, *, run_jobs: bool = True, **settings: Any
) -> AsyncIterator[AppContext]:
    """kioku opened in this process on ``data_dir`` (none: a temporary one, removed
    after), with ``settings`` as ``KiokuSettings`` fields; jobs run in-process unless
    ``run_jobs`` is false (then an add embeds inline)."""
    from mcp_gateway.common.settings import KiokuSettings
    from mcp_gateway.services.app import open_app

    with tempfile.TemporaryDirectory(prefix="kioku-bench-") as tmp:
        config = KiokuSettings(data_dir=data_dir or Path(tmp), **settings)
        async with open_app(config, run_jobs=run_jobs) as app:
            yield app


async def add(app: AppContext, text: str, namespace: str | None = None, **fields: str) -> str:
    """One note through the server's store path (``NoteService.store``: committed,
    lexically searchable, its embedding queued; ``add_note`` runs it with its checks,
    write-behind and activity log around it); the note's id."""
    from mcp_gateway.common.inputs import NoteFields
    from mcp_gateway.services.notes import NoteService  # older checkouts too (PYTHONPATH)

    note = await NoteService(app).store(
        NoteFields(text=text, **fields), namespace or app.namespaces[0]
    )
    return note.id


def watch_applied(app: AppContext) -> dict[str, float]:
    """Note id -> when its first dense vector (a draft or the exact one) reached the
    index, on ``time.perf_counter``: when it became semantically searchable."""
    done: dict[str, float] = {}
    upsert = app.index.upsert

    async def timed_upsert(points: Sequence[Any]) -> None:
        await upsert(points)
        now = time.perf_counter()
        for p in points:
            if p.dense is not None:
                done.setdefault(p.payload["source_id"], now)

    app.index.upsert = timed_upsert  # type: ignore[method-assign]
    return done


async def settle(app: AppContext, limit_s: float = 600.0, *, reconcile: bool = False) -> bool:
    """Wait until every job has run and no draft is left (every vector from the exact
    pass), at most ``limit_s``; whether it settled. A backlog is drafted first and the
    idle batcher redoes the drafts exactly; ``reconcile`` runs the owner's periodic pass
    instead of waiting for it (a bulk load, where only the end state matters)."""
    import anyio

    deadline = time.monotonic() + limit_s
    await app.settle()
    drafts = getattr(app.vectors, "drafts", None)  # older checkouts kept no drafts
    while drafts is not None and await drafts(app.embedder.model_id, limit=1):
        if time.monotonic() > deadline:
            return False
        if reconcile:
            await app.reconcile()
            await app.settle()
        else:
            await anyio.sleep(0.1)
    return True


async def timed_searches(app: AppContext, queries: Iterable[str], top: int = 5) -> list[float]:
    """Each query searched once, server side (the whole search path, no door); ms each."""
    from mcp_gateway.search.service import SearchRequest

    out = []
    for query in queries:
        began = time.perf_counter()
        await app.search.search(SearchRequest(query=query, top=top))
        out.append((time.perf_counter() - began) * 1000)
    return out
