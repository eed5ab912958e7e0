"""Per-stage timestamps of ``add_note`` in the proxy and the owner, for
``bench/ack_stages.py`` only: this directory goes first on ``PYTHONPATH`` of the
processes that bench starts, and does nothing unless ``BENCH_ACK_STAGES`` names a
directory. Nothing in ``mcp_gateway`` knows of it: the wrappers are put on from here.

Each process appends rows ``kind key wall cpu_thread cpu_process thread`` (wall:
``time.perf_counter``, CLOCK_MONOTONIC, the same clock as the client's) to
``<dir>/<pid>.tsv``. ``key``: the JSON-RPC id for what crosses a door, the note id for
what the owner does with a note. The owner's loop thread and the store's worker also
record the kernel's schedstat (on a CPU, waiting in a run queue) at either end of the
add and of its transaction, and every 200 adds each thread's CPU seconds.

Two diagnostics, each only under its own variable (bench/LOG.md, "fast first: where the
burst ack goes"): ``BENCH_ACK_HOLD_E5=1``: e5's document passes wait until no add came
for 1 s, so the burst runs without them; ``BENCH_ACK_VECTOR_PROCESS=N``: the static
vectors are computed in a child process at nice +N (pickles over a pipe) instead of a
thread of the owner; ``BENCH_ACK_VECTOR_LOOP=N``: the same child, its pipe written and
watched by the owner's event loop (no thread at all).
"""

from __future__ import annotations

import atexit
import builtins
import os
import re
import sys
import threading
import time

OUT = os.environ.get("BENCH_ACK_STAGES", "")
_RPC = re.compile(rb'"id":\s*(\d+)')
_rows: list[str] = []
_lock = threading.Lock()
_current = {"rpc": ""}  # the add being served (one in flight: --inflight 1)


def _mark(kind: str, key: str) -> None:
    row = (
        f"{kind}\t{key}\t{time.perf_counter():.7f}\t{time.thread_time():.7f}\t"
        f"{time.process_time():.7f}\t{threading.get_native_id()}\n"
    )
    with _lock:
        _rows.append(row)
        if len(_rows) >= 4000:
            _flush_locked()


def _sched(kind: str, key: str) -> None:
    """The calling thread's time on a CPU and waiting in a run queue (ns, the kernel's
    schedstat): wall minus both is time it slept (the GIL, a lock, I/O)."""
    with open("/proc/thread-self/schedstat", encoding="ascii") as f:
        run, wait, _ = f.read().split()
    now = time.perf_counter()
    row = f"{kind}\t{key}\t{now:.7f}\t{int(run) / 1e9:.7f}\t{int(wait) / 1e9:.7f}\t0\n"
    with _lock:
        _rows.append(row)


def _flush_locked() -> None:
    if _rows:
        with open(os.path.join(OUT, f"{os.getpid()}.tsv"), "a", encoding="utf-8") as f:
            f.writelines(_rows)
        _rows.clear()


def _flush() -> None:
    with _lock:
        _flush_locked()


def _rpc(data: bytes) -> str:
    m = _RPC.search(data)
    return m.group(1).decode() if m else ""


def _install_proxy() -> None:
    from mcp_gateway.daemon import stdio_proxy

    send, deliver = stdio_proxy.Proxy._send, stdio_proxy.Proxy._deliver

    def _send(self, line, req_id, is_request):  # type: ignore[no-untyped-def]
        if b'"add_note"' in line:
            _mark("proxy_in", str(req_id))
            send(self, line, req_id, is_request)
            _mark("proxy_in_sent", str(req_id))
        else:
            send(self, line, req_id, is_request)

    def _deliver(self, line):  # type: ignore[no-untyped-def]
        add = b"semantic_indexing" in line
        if add:
            _mark("proxy_out", _rpc(line))
        deliver(self, line)
        if add:
            _mark("proxy_out_written", _rpc(line))

    stdio_proxy.Proxy._send, stdio_proxy.Proxy._deliver = _send, _deliver


def _tasks(adds: int) -> None:
    """Each of this process's threads' CPU seconds so far, and its nice value (the e5
    document lane's threads are niced)."""
    tick = os.sysconf("SC_CLK_TCK")
    now = time.perf_counter()
    rows = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = (int(fields[11]) + int(fields[12])) / tick
        rows.append(f"task\t{adds}:{tid}:{fields[16]}\t{now:.7f}\t{cpu:.4f}\t0\t{tid}\n")
    with _lock:
        _rows.extend(rows)


def _timed_send(sock_send):  # type: ignore[no-untyped-def]
    async def send(self, item):  # type: ignore[no-untyped-def]
        if b"semantic_indexing" in item:
            rpc = _rpc(item)
            _mark("owner_write", rpc)
            await sock_send(self, item)
            _mark("owner_written", rpc)
            _sched("sched_written", rpc)
        else:
            await sock_send(self, item)

    return send


_CHILD = r"""
import os, pickle, struct, sys
os.nice(int(sys.argv[1]))
from mcp_gateway.embedders import static
static.enable(True)
static.shared()
inp, out = sys.stdin.buffer, sys.stdout.buffer
while head := inp.read(4):
    docs = pickle.loads(inp.read(struct.unpack("<I", head)[0]))
    data = pickle.dumps([static.vector(d, False) for d in docs])
    out.write(struct.pack("<I", len(data)) + data)
    out.flush()
"""


def _child_vectors(indexer) -> None:  # type: ignore[no-untyped-def]
    import pickle
    import struct
    import subprocess

    nice = os.environ.get("BENCH_ACK_VECTOR_PROCESS", "10")
    env = {k: v for k, v in os.environ.items() if k != "BENCH_ACK_STAGES"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, nice], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    one = threading.Lock()

    def _vectors(docs, since):  # type: ignore[no-untyped-def]
        _mark("fast_thread_start", "")
        data = pickle.dumps(list(docs))
        with one:
            child.stdin.write(struct.pack("<I", len(data)) + data)
            child.stdin.flush()
            size = struct.unpack("<I", child.stdout.read(4))[0]
            out = pickle.loads(child.stdout.read(size))
        _mark("fast_thread_end", "")
        return out

    indexer._static_vectors = _vectors


def _loop_child_fill(indexer) -> None:  # type: ignore[no-untyped-def]
    """``Indexer.fill_fast_many`` replaced: each note's text goes to a child process at
    nice +N over a pipe the event loop writes and watches (``add_reader``): no thread
    hop, no worker waiting on the pipe, the loop only pickles and unpickles."""
    import asyncio
    import collections
    import pickle
    import struct
    import subprocess

    from mcp_gateway.common.types import point_id
    from mcp_gateway.indexing.points import note_document

    nice = os.environ.get("BENCH_ACK_VECTOR_LOOP", "10")
    env = {k: v for k, v in os.environ.items() if k != "BENCH_ACK_STAGES"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, nice],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        bufsize=0,
    )
    assert child.stdin is not None and child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    waiting: collections.deque[asyncio.Future[list]] = collections.deque()  # type: ignore[type-arg]
    buf = bytearray()
    watched: list[bool] = []

    def readable() -> None:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        buf.extend(chunk)
        while len(buf) >= 4:
            size = struct.unpack_from("<I", buf)[0]
            if len(buf) < 4 + size:
                break
            vectors = pickle.loads(bytes(buf[4 : 4 + size]))
            del buf[: 4 + size]
            done = waiting.popleft()
            if not done.done():
                done.set_result(vectors)

    async def fill_fast_many(self, notes):  # type: ignore[no-untyped-def]
        pending = self.pending
        if pending is None:
            return
        loop = asyncio.get_running_loop()
        if not watched:
            loop.add_reader(fd, readable)
            watched.append(True)
        ids = {point_id("note", n.id): n for n in notes}
        todo = [(pid, note_document(n)) for pid, n in ids.items() if pending.expects_fast(pid)]
        if not todo:
            return
        data = pickle.dumps([doc for _, doc in todo])
        done = loop.create_future()
        waiting.append(done)
        child.stdin.write(struct.pack("<I", len(data)) + data)
        vectors = await done
        for (pid, _), vec in zip(todo, vectors, strict=True):
            pending.fill_fast(pid, vec)

    indexer.Indexer.fill_fast_many = fill_fast_many


def _install_owner() -> None:
    from anyio._backends import _asyncio as anyio_asyncio
    from anyio.streams.buffered import BufferedByteReceiveStream

    from mcp_gateway.indexing import indexer
    from mcp_gateway.services import notes as notes_service
    from mcp_gateway.stores import notes as note_store

    receive_until = BufferedByteReceiveStream.receive_until

    async def _receive_until(self, delimiter, max_bytes):  # type: ignore[no-untyped-def]
        line = await receive_until(self, delimiter, max_bytes)
        if b'"add_note"' in line:
            _current["rpc"] = _rpc(line)
            _mark("owner_read", _current["rpc"])
            _sched("sched_read", _current["rpc"])
            _current["adds"] = adds = _current.get("adds", 0) + 1
            _current["last_add"] = time.perf_counter()
            if adds % 200 == 20:
                _tasks(adds)
        return line

    BufferedByteReceiveStream.receive_until = _receive_until  # type: ignore[method-assign]

    for cls in (anyio_asyncio.SocketStream, anyio_asyncio.UNIXSocketStream):
        cls.send = _timed_send(cls.send)  # type: ignore[method-assign]

    add = notes_service.NoteService.add

    async def _add(self, scope, fields):  # type: ignore[no-untyped-def]
        rpc = _current["rpc"]
        _mark("add_start", rpc)
        result = await add(self, scope, fields)
        _mark("add_end", rpc)
        _mark("note_of:" + result.id, rpc)
        return result

    notes_service.NoteService.add = _add  # type: ignore[method-assign]

    add_or = note_store.NoteStore.add_or_existing

    async def _add_or(self, fields, namespace):  # type: ignore[no-untyped-def]
        rpc = _current["rpc"]
        _mark("commit_start", rpc)
        out = await add_or(self, fields, namespace)
        _mark("commit_end", rpc)
        return out

    note_store.NoteStore.add_or_existing = _add_or  # type: ignore[method-assign]

    # inside the commit: the hop to the worker thread, the store's lock and BEGIN, the
    # statements and COMMIT, the hop back (commit_end)
    from mcp_gateway.stores import db as store_db

    transaction_sync = store_db.Database.transaction_sync

    def _transaction_sync(self, fn):  # type: ignore[no-untyped-def]
        if "add_or_existing" not in getattr(fn, "__qualname__", ""):
            return transaction_sync(self, fn)
        rpc = _current["rpc"]
        _mark("tx_enter", rpc)
        _sched("sched_tx_enter", rpc)

        def timed(conn):  # type: ignore[no-untyped-def]
            _mark("tx_locked", rpc)
            return fn(conn)

        out = transaction_sync(self, timed)
        _mark("tx_exit", rpc)
        _sched("sched_tx_exit", rpc)
        return out

    store_db.Database.transaction_sync = _transaction_sync  # type: ignore[method-assign]

    lexical = indexer.Indexer.put_new_lexical

    async def _lexical(self, note):  # type: ignore[no-untyped-def]
        _mark("lexical_start", note.id)
        await lexical(self, note)
        _mark("lexical_end", note.id)

    indexer.Indexer.put_new_lexical = _lexical  # type: ignore[method-assign]

    if os.environ.get("BENCH_ACK_VECTOR_LOOP"):
        _loop_child_fill(indexer)
    many = indexer.Indexer.fill_fast_many

    async def _many(self, notes):  # type: ignore[no-untyped-def]
        key = notes[0].id if len(notes) == 1 else ""
        _mark("fast_hop", key)
        await many(self, notes)
        _mark("fast_pooled", key)

    indexer.Indexer.fill_fast_many = _many  # type: ignore[method-assign]

    vectors = indexer._static_vectors

    def _vectors(docs, since):  # type: ignore[no-untyped-def]
        _mark("fast_thread_start", "")
        out = vectors(docs, since)
        _mark("fast_thread_end", "")
        return out

    indexer._static_vectors = _vectors

    if os.environ.get("BENCH_ACK_VECTOR_PROCESS"):
        # a diagnostic: the static vectors computed in a child process (niced: it shares
        # no interpreter lock with the owner, so a low priority inverts nothing)
        _child_vectors(indexer)

    if os.environ.get("BENCH_ACK_HOLD_E5"):
        # a diagnostic: e5's document passes wait until no add came for 1 s (the
        # burst's end), so nothing but the adds and their follow-ups runs in the burst
        from mcp_gateway.embedders import local

        encode = local.LocalEmbedder.encode_documents

        async def _held(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            import anyio

            # a poll: the burst's end moves with each add
            while time.perf_counter() - _current.get("last_add", 0.0) < 1.0:  # noqa: ASYNC110
                await anyio.sleep(0.1)
            return await encode(self, *args, **kwargs)

        local.LocalEmbedder.encode_documents = _held  # type: ignore[method-assign]


def _ready(name: str, attr: str) -> bool:
    return hasattr(sys.modules.get(name), attr)


def _install() -> None:

    with open("/proc/self/cmdline", "rb") as f:
        argv = f.read().replace(b"\0", b" ").decode(errors="replace")
    if "mcp_gateway.daemon.owner" in argv:
        role, install = "owner", _install_owner
        wanted = [
            ("mcp_gateway.services.notes", "NoteService"),
            ("mcp_gateway.indexing.indexer", "_static_vectors"),
            ("mcp_gateway.stores.notes", "NoteStore"),
        ]
    elif "mcp_gateway.cli serve" in argv:
        role, install = "proxy", _install_proxy
        wanted = [("mcp_gateway.daemon.stdio_proxy", "Proxy")]
    else:
        return
    # put the wrappers on once the modules are imported (fully: a module being
    # executed is in sys.modules already), then take the import hook off
    real_import = builtins.__import__

    def hooked(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        module = real_import(name, *args, **kwargs)
        if builtins.__import__ is hooked and all(_ready(m, a) for m, a in wanted):
            builtins.__import__ = real_import
            install()
        return module

    builtins.__import__ = hooked
    atexit.register(_flush)
    _mark("start:" + role, "")


if OUT:
    _install()
