"""The shared local gateway: one daemon per data dir, many stdio clients.

The embedded index (Qdrant engine in-process) and the in-process job runner allow ONE
owning process per data dir. Editors each spawn their own ``kioku serve``, so every
``kioku serve`` on stdio is a thin proxy (``stdio_proxy``) to one daemon, which owns
the stores and serves MCP over streamable HTTP on a Unix socket in the data dir::

    VS Code ── stdio ── kioku serve (proxy) ─┐
    Claude  ── stdio ── kioku serve (proxy) ─┼─ <data_dir>/gateway.sock ── daemon ── stores
    Cursor  ── stdio ── kioku serve (proxy) ─┘      (0600, HTTP, stateless JSON)

Election: the daemon holds an exclusive ``fcntl.flock`` on ``gateway.lock`` for its
whole life (the kernel drops it on any exit, SIGKILL included). Only the lock holder
touches the stores or the socket path, so a stale socket left by a crash is simply
unlinked by the next owner. The socket is listened on only after the stores are open,
so a successful ``connect`` means "ready". The daemon exits after ``idle_exit_s``
without requests; the next proxy request starts a fresh one.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.transport_security import TransportSecuritySettings

from .settings import KiokuSettings, load_settings

log = logging.getLogger(__name__)

# The Host header the proxy sends; the socket's file mode is the real access control.
GATEWAY_HOST = "kioku-gateway"
# AF_UNIX paths are limited to 108 bytes on Linux (104 on macOS).
_MAX_SOCKET_PATH = 100
# How long a freshly spawned daemon retries the lock while a previous owner shuts down.
_LOCK_WAIT_S = 3.0
_EXIT_LOST_ELECTION = 0
_EXIT_STARTUP_FAILED = 3


def supported() -> bool:
    """Unix sockets and flock: every POSIX system; elsewhere kioku runs standalone."""
    return hasattr(socket, "AF_UNIX") and sys.platform != "win32"


@dataclass(frozen=True, slots=True)
class GatewayPaths:
    lock: Path
    socket: Path
    log: Path

    @classmethod
    def for_settings(cls, settings: KiokuSettings) -> GatewayPaths:
        data = settings.data_dir.resolve()
        sock = data / "gateway.sock"
        if len(os.fsencode(sock)) > _MAX_SOCKET_PATH:
            # A deep data dir: fall back to a per-user, per-data-dir name in the temp dir.
            digest = hashlib.sha256(os.fsencode(data)).hexdigest()[:16]
            sock = Path(tempfile.gettempdir()) / f"kioku-{os.getuid()}-{digest}.sock"
        return cls(lock=data / "gateway.lock", socket=sock, log=data / "logs" / "gateway.log")


# -- election -------------------------------------------------------------------------


@contextlib.contextmanager
def _lock_fd(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY)  # flock needs no write access: works on a read-only fs
    try:
        yield fd
    finally:
        os.close(fd)


def lock_held(path: Path) -> bool:
    """True while a daemon owns ``path``; probing holds the lock for microseconds."""
    if not path.exists():
        return False
    with _lock_fd(path) as fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return True
            raise
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False


def owner_pid(paths: GatewayPaths) -> int | None:
    """The running daemon's pid (written into the lock file), or None."""
    try:
        text = paths.lock.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and lock_held(paths.lock) else None


def _acquire(path: Path, wait_s: float) -> int | None:
    """Take the lock (retrying up to ``wait_s``); the fd stays open while we own it.
    OSError when the data dir is not writable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd


def can_connect(path: Path) -> bool:
    """A listening daemon accepts at once; a stale or still-starting one refuses."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(os.fspath(path))
        except OSError:
            return False
        return True


def spawn_daemon(settings: KiokuSettings, paths: GatewayPaths) -> subprocess.Popen[bytes]:
    """Start a detached daemon; it exits at once (code 0) if another one won."""
    paths.log.parent.mkdir(parents=True, exist_ok=True)
    with open(paths.log, "ab") as logfile:
        # New session: the daemon outlives the editor that happened to start it. Its
        # stdout is not ours: the proxy's stdout carries the protocol.
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcp_gateway.local_gateway",
                "--data-dir",
                str(settings.data_dir),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=logfile,
            start_new_session=True,
            close_fds=True,
        )


_CANNOT_START = "kioku gateway cannot start: "


def start_failure(paths: GatewayPaths) -> str:
    """The daemon's last one-line start-up failure reason, for the proxy's error."""
    try:
        text = paths.log.read_text("utf-8", errors="replace")
    except OSError:
        return "no gateway log"
    reasons = [ln.split(_CANNOT_START, 1)[1] for ln in text.splitlines() if _CANNOT_START in ln]
    return reasons[-1] if reasons else "unknown reason"


# -- the daemon -----------------------------------------------------------------------


class _Activity:
    """ASGI middleware recording request activity for the idle shutdown."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.in_flight = 0
        self.last = time.monotonic()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last = time.monotonic()


def _bind(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # stale: we hold the lock, so nobody else can be listening here
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600 from the start: no window with wider rights
    try:
        sock.bind(os.fspath(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    # Not listening yet: uvicorn listens after the lifespan opened the stores, so a
    # proxy that connects is talking to a ready gateway.
    return sock


def _unlink_if_ours(path: Path, inode: int) -> None:
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            path.unlink()


async def _serve(settings: KiokuSettings, sock: socket.socket) -> bool:
    """Serve until idle or signalled; False when the stores could not be opened."""
    import uvicorn

    from .server import create_server

    mcp = create_server(settings)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[GATEWAY_HOST], allowed_origins=[]
    )
    # Stateless + JSON: each JSON-RPC message is one POST answered by one JSON body, and
    # a respawned daemon needs no session state from the proxy.
    app = _Activity(
        mcp.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=security
        )
    )
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=10, access_log=False
    )
    server = uvicorn.Server(config)
    idle = settings.local_gateway.idle_exit_s

    async def watch_idle() -> None:
        while not server.should_exit:
            await anyio.sleep(min(max(idle / 4, 0.2), 5.0))
            if app.in_flight == 0 and time.monotonic() - app.last > idle:
                log.info("no requests for %.0f s: shutting down", idle)
                server.should_exit = True

    async with anyio.create_task_group() as tg:
        if idle > 0:
            tg.start_soon(watch_idle)
        try:
            await server.serve(sockets=[sock])
        except SystemExit:  # uvicorn's way of saying the lifespan (open_app) failed
            return False
        finally:
            tg.cancel_scope.cancel()
    return True


def run_daemon(settings: KiokuSettings) -> int:
    paths = GatewayPaths.for_settings(settings)
    try:
        fd = _acquire(paths.lock, _LOCK_WAIT_S)
    except OSError as exc:
        log.error("%s%s is not writable (%s)", _CANNOT_START, paths.lock, exc.strerror)
        return _EXIT_STARTUP_FAILED
    if fd is None:
        log.info("another kioku gateway owns %s; leaving it to that one", settings.data_dir)
        return _EXIT_LOST_ELECTION
    from .app import preflight  # the proxy imports this module: keep its start-up light

    reason = anyio.run(preflight, settings)
    try:
        sock = _bind(paths.socket) if reason is None else None
    except OSError as exc:
        reason, sock = f"cannot create {paths.socket} ({exc.strerror})", None
    if sock is None:
        log.error("%s%s", _CANNOT_START, reason)
        os.close(fd)
        return _EXIT_STARTUP_FAILED
    inode = os.stat(paths.socket).st_ino
    log.info("kioku gateway pid %d on %s", os.getpid(), paths.socket)
    # uvicorn handles SIGTERM/SIGINT during serve() and re-raises them once it returns;
    # with the default handlers that would kill us before the cleanup below.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: log.info("signal %d: stopping", signum))
    try:
        if not anyio.run(_serve, settings, sock):
            log.error("%sthe stores failed to open; see the errors above", _CANNOT_START)
            return _EXIT_STARTUP_FAILED
    finally:
        _unlink_if_ours(paths.socket, inode)
        sock.close()
        os.close(fd)  # releases the lock last: the stores are closed by now
    log.info("kioku gateway stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_gateway.local_gateway")
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    settings = load_settings(data_dir=args.data_dir)
    logging.basicConfig(
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
    )
    # Stateless mode "terminates" a transport after every request: not news.
    logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    return run_daemon(settings)


if __name__ == "__main__":
    raise SystemExit(main())
