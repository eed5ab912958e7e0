"""Hostile clients for the door tests and ``bench/doors_flood.py``: many connections
that never finish their request, re-opened as the server closes them (loopback only,
bounded in count and time)."""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HALF_HEADERS = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def slow_body(host: str, token: str, path: str = "/mcp") -> bytes:
    """Complete headers announcing a body that never comes."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Length: 100000\r\n\r\n{"
    ).encode()


def lowered_nofile(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` for the child: soft and hard open-file limits of ``limit``."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


class Flood:
    """``count`` connections to ``connect()``'s target, each sending ``payload`` and
    nothing more; one the server closes is opened again (churn) until ``stop``."""

    def __init__(self, connect: Callable[[], socket.socket], payload: bytes, count: int) -> None:
        self.connect, self.payload, self.count = connect, payload, count
        self.opened = 0
        self.closed_by_server = 0
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()

    def _open(self, sel: selectors.BaseSelector) -> None:
        try:
            sock = self.connect()
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.send(self.payload)
            sel.register(sock, selectors.EVENT_READ)
            self.opened += 1
        except OSError:
            self.failed += 1
            time.sleep(0.01)

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        try:
            while len(sel.get_map()) < self.count and not self._stop.is_set():
                self._open(sel)
            self.ready.set()
            while not self._stop.is_set():
                for key, _ in sel.select(timeout=0.1):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:  # closed by the server: open another
                        sel.unregister(sock)
                        sock.close()
                        self.closed_by_server += 1
                        self._open(sel)
                    # an answer (401, 408...) is read and the connection kept open
        finally:
            self.ready.set()
            for key in list(sel.get_map().values()):
                with contextlib.suppress(OSError):
                    key.fileobj.close()  # type: ignore[union-attr]
            sel.close()

    def __enter__(self) -> Flood:
        self._thread.start()
        self.ready.wait(120)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def held(self) -> int:
        return self.opened - self.closed_by_server


def tcp(port: int) -> Callable[[], socket.socket]:
    return lambda: socket.create_connection(("127.0.0.1", port), timeout=5)


def unix(path: Path) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(5)
        sock.connect(str(path))
        return sock

    return connect


def open_half(port: int, count: int, payload: bytes = HALF_HEADERS) -> list[socket.socket]:
    """``count`` connections that sent ``payload`` (kept open by the caller)."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        sock.sendall(payload)
        socks.append(sock)
    return socks


def still_open(socks: list[socket.socket], wait_s: float) -> int:
    """How many of ``socks`` the server has not closed after ``wait_s`` (all closed)."""
    deadline = time.monotonic() + wait_s
    held = 0
    for sock in socks:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            while sock.recv(65536):  # an answer first (400, 408): read on to the close
                pass
        except TimeoutError:
            held += 1
        except OSError:
            pass
        finally:
            sock.close()
    return held


def size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


@contextlib.contextmanager
def timed() -> Iterator[list[float]]:
    out: list[float] = []
    start = time.perf_counter()
    try:
        yield out
    finally:
        out.append(time.perf_counter() - start)
