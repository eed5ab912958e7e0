"""Owner election and the shared local daemon: one owner per data dir, many clients.

The embedded index (Qdrant engine in-process) and the in-process job runner allow ONE
owning process per data dir (``owner``). Editors each spawn their own ``kioku serve``,
so every ``kioku serve`` on stdio is a thin proxy (``stdio_proxy``) to one daemon,
which owns the stores and runs one MCP session per proxy on a Unix socket in the data
dir (``session.sock``; ``gateway.sock`` beside it serves the admin API, the UI and MCP
over HTTP; ``kioku serve --http`` owns both the same way)::

    VS Code ── stdio ── kioku serve (proxy) ─┐
    Claude  ── stdio ── kioku serve (proxy) ─┼─ <data_dir>/session.sock ── daemon ── stores
    Cursor  ── stdio ── kioku serve (proxy) ─┘    (0700 dir, peer uid checked, JSON lines)

Election: the daemon holds an exclusive ``fcntl.flock`` on ``gateway.lock`` for its
whole life (the kernel drops it on any exit, SIGKILL included). Only the lock holder
touches the stores or the socket path, so a stale socket left by a crash is simply
unlinked by the next owner. The owner's socket is listened on only after the stores are
open, so a successful ``connect`` there means "ready"; the session socket listens from
the start and holds what needs the stores (``session_socket.Opening``). The daemon exits
after ``idle_exit_s`` without requests and with no proxy attached; the next proxy starts
a fresh one. This module holds the election primitives; it imports nothing heavy, so
the proxy starts fast.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_gateway.common import fsperms, peercred
from mcp_gateway.common.settings import KiokuSettings

log = logging.getLogger(__name__)

# The Host header the proxy sends; the socket's private directory and the peer-uid
# check on both ends (``peercred``) are the access control.
GATEWAY_HOST = "kioku-gateway"
# AF_UNIX paths are limited to 108 bytes on Linux (104 on macOS).
_MAX_SOCKET_PATH = 100
# What a broken or closed socket stream raises (anyio), for both ends of the session
# socket: the proxy (``stdio_proxy``) and the owner (``session_socket``).
STREAM_GONE: tuple[type[BaseException], ...] = (
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.DelimiterNotFound,
    OSError,
)
# The MCP session socket of the stdio proxies, same directory and length as gateway.sock.
SESSION_SOCKET = "session.sock"


def supported() -> bool:
    """Unix sockets and flock: every POSIX system; elsewhere kioku runs standalone."""
    return hasattr(socket, "AF_UNIX") and sys.platform != "win32"


@dataclass(frozen=True, slots=True)
class GatewayPaths:
    lock: Path
    log: Path
    # short enough for AF_UNIX: the socket in the 0700 data dir itself
    direct: Path | None
    # otherwise: the file (in the data dir) naming the private mkdtemp dir of the socket
    socket_record: Path

    @classmethod
    def for_settings(cls, settings: KiokuSettings) -> GatewayPaths:
        data = settings.data_dir.resolve()
        sock = data / "gateway.sock"
        fits = len(os.fsencode(sock)) <= _MAX_SOCKET_PATH
        return cls(
            lock=data / "gateway.lock",
            log=data / "logs" / "gateway.log",
            direct=sock if fits else None,
            socket_record=data / "gateway.sockdir",
        )

    @property
    def socket(self) -> Path:
        """Where the daemon listens. Never a predictable name in a shared temp dir
        (another user could bind it first): a deep data dir uses the private dir
        recorded by the daemon, or before one exists a path that cannot be connected."""
        if self.direct is not None:
            return self.direct
        private = peercred.read_recorded_dir(self.socket_record)
        return private / "gateway.sock" if private else self.socket_record.with_suffix(".none")

    @property
    def session_socket(self) -> Path:
        """Where the stdio proxies attach (``session_socket``): beside ``socket``."""
        return self.socket.with_name(SESSION_SOCKET)

    def make_socket_path(self) -> Path:
        """The owner's side: the socket path, creating the private dir if needed."""
        if self.direct is not None:
            return self.direct
        return peercred.ensure_private_dir(self.socket_record) / "gateway.sock"


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


def acquire(path: Path, wait_s: float, *, write_pid: bool = True) -> int | None:
    """Take the lock (retrying up to ``wait_s``); the fd stays open while we own it.
    The lock file then names this process, or nobody yet (``write_pid=False``: the
    spawner names its child, ``spawn_daemon``). OSError when the data dir is not
    writable."""
    fsperms.secure_data_dir(path.parent)
    fd = fsperms.open_private(path, os.O_RDWR | os.O_CREAT)
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
        os.ftruncate(fd, 0)  # never a previous owner's pid beside a held lock
        if write_pid:
            name_owner(fd, os.getpid())
        return fd


def name_owner(fd: int, pid: int) -> None:
    """Write the owner's pid into the lock file (``owner_pid`` reads it)."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{pid}\n".encode(), 0)


def adopt(fd: int) -> bool:
    """The daemon's side of ``spawn_daemon``: whether the inherited ``fd`` holds the lock
    (a ``flock`` on the same open file succeeds at once)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def can_connect(path: Path) -> bool:
    """A listening daemon accepts at once; a stale or still-starting one refuses, and
    one run by another user does not count."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(os.fspath(path))
        except OSError:
            return False
        if not peercred.same_user(s):
            log.warning("%s is served by another user: ignoring it", path)
            return False
        return True


def spawn_daemon(settings: KiokuSettings, paths: GatewayPaths) -> subprocess.Popen[bytes] | None:
    """Take the lock and start a detached daemon that inherits it (``--lock-fd``); None
    when another process holds the lock. The lock and the child's pid in the lock file
    are there before the child runs a line, so ``kioku stop`` finds and stops an owner
    still importing or loading its model (it used to take the lock itself, seconds of
    imports later, and a stop meanwhile found nobody)."""
    fd = acquire(paths.lock, 0.0, write_pid=False)
    if fd is None:
        return None
    try:
        fsperms.secure_data_dir(paths.log.parent)
        log_fd = fsperms.open_private(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(log_fd, "ab") as logfile:
            # New session: the daemon outlives the editor that happened to start it. Its
            # stdout is not ours: the proxy's stdout carries the protocol.
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mcp_gateway.daemon.owner",
                    "--data-dir",
                    str(settings.data_dir),
                    "--lock-fd",
                    str(fd),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=logfile,
                start_new_session=True,
                close_fds=True,
                pass_fds=(fd,),
            )
        name_owner(fd, child.pid)
    finally:
        os.close(fd)  # the child's copy holds the lock now (or nobody's, on failure)
    return child


CANNOT_START = "kioku gateway cannot start: "


class GatewayUnavailable(Exception):
    pass


class GatewayStopped(GatewayUnavailable):
    """The daemon this caller started was stopped (``kioku stop``) before it answered."""


def ensure_daemon(settings: KiokuSettings, paths: GatewayPaths) -> None:
    """Return once a daemon accepts connections on the session socket; start one if none
    owns the lock. Blocking (polls every 50 ms): call it from a thread in async code, one
    call at a time per caller. A daemon started here and stopped before it answered is
    not started again by this call (``GatewayStopped``): the stop was meant for it."""
    deadline = time.monotonic() + settings.local_gateway.start_timeout_s
    child = None
    while time.monotonic() < deadline:
        if can_connect(paths.session_socket):
            return
        if child is not None and child.poll() is not None and not lock_held(paths.lock):
            if child.returncode in (0, -signal.SIGTERM, -signal.SIGINT):
                raise GatewayStopped(
                    f"the kioku gateway for {settings.data_dir} was stopped while it "
                    "started (`kioku stop`); the next request starts it again"
                )
            raise GatewayUnavailable(
                f"the kioku gateway for {settings.data_dir} failed to start "
                f"(log: {paths.log}): {start_failure(paths)}"
            )
        if child is None and not lock_held(paths.lock):
            log.info("starting the kioku gateway for %s", settings.data_dir)
            try:
                child = spawn_daemon(settings, paths)  # None: another one took the lock
            except OSError as exc:
                raise GatewayUnavailable(
                    f"cannot start the kioku gateway: {exc.filename} is not "
                    f"writable ({exc.strerror}); the data dir must be writable"
                ) from exc
        time.sleep(0.05)
    raise GatewayUnavailable(
        f"the kioku gateway for {settings.data_dir} did not become ready within "
        f"{settings.local_gateway.start_timeout_s:g} s (see {paths.log})"
    )


def start_failure(paths: GatewayPaths) -> str:
    """The daemon's last one-line start-up failure reason, for the proxy's error."""
    try:
        text = paths.log.read_text("utf-8", errors="replace")
    except OSError:
        return "no gateway log"
    reasons = [ln.split(CANNOT_START, 1)[1] for ln in text.splitlines() if CANNOT_START in ln]
    return reasons[-1] if reasons else "unknown reason"


def bind(path: Path) -> socket.socket:
    """Bind (not listen on) the owner's socket, 0600 from the start."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # stale: we hold the lock, so nobody else can be listening here
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600 from the start: no window with wider rights
    try:
        sock.bind(os.fspath(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    # Not listening yet: the owner listens when it can answer (``owner._serve``).
    return sock


def unlink_if_ours(path: Path, inode: int) -> None:
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == inode:
            path.unlink()


def drop_private_dir(paths: GatewayPaths, sockets: Path) -> None:
    """At the owner's exit, its lock still held: the private dir its sockets were in
    (a deep data dir's, ``make_socket_path``) and the record naming it, so none lingers
    in the temp dir after its data dir is gone; the next owner makes a new one. Only an
    empty dir goes, and its record with it; nothing for a socket in the data dir."""
    if paths.direct is not None:
        return
    try:
        sockets.rmdir()
    except OSError:
        return  # not empty (not ours to judge) or gone already: keep the record
    with contextlib.suppress(OSError):
        paths.socket_record.unlink()


def write_private(path: Path, text: str) -> None:
    """Write a small file readable by its owner only."""
    fd = fsperms.open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
