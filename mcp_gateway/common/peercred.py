"""Who is on the other end of a Unix socket, and the private directory that holds it.

The local gateway's socket is reachable only by its owner: it lives in the 0700 data
dir, or -- when that path is too long for ``AF_UNIX`` -- in a private 0700 directory
made with ``mkdtemp`` whose path is recorded in the (0700) data dir. Never a
predictable name in a shared temp dir: another local user could bind it first and
capture every note (the hijack of issue 10).

On top of the file modes, both ends check the peer's uid on every connection
(``SO_PEERCRED`` on Linux, ``getpeereid`` on macOS/BSD): the proxy refuses a gateway
run by another user, the gateway drops a connection from another user.

Verified by ``tests/test_security_local.py`` (deep data dir with an attacker bound on
the old /tmp name; a foreign-uid client and a foreign-uid fake gateway).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def peer_uid(sock: socket.socket) -> int:
    """The effective uid of the process at the other end of a connected AF_UNIX socket."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if libc.getpeereid(sock.fileno(), ctypes.byref(uid), ctypes.byref(gid)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(uid.value)


def same_user(sock: socket.socket | None) -> bool:
    """True when ``sock``'s peer runs as this process's uid; False if unknown."""
    if sock is None:
        return False
    try:
        return peer_uid(sock) == os.geteuid()
    except OSError as exc:
        log.warning("cannot read the peer's credentials: %s", exc)
        return False


# -- the private socket directory -------------------------------------------------------


def private_dir_ok(path: Path) -> bool:
    """A real directory (not a symlink), owned by us, no access for group or others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and stat.S_IMODE(st.st_mode) & 0o077 == 0
    )


def read_recorded_dir(record: Path) -> Path | None:
    """The private socket dir recorded in the data dir, if it is still safe to use."""
    try:
        st = os.lstat(record)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        text = record.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    path = Path(text) if text else None
    return path if path is not None and path.is_absolute() and private_dir_ok(path) else None


def ensure_private_dir(record: Path) -> Path:
    """The recorded private dir, or a new ``mkdtemp`` one (0700, random name) recorded
    in ``record`` (0600). Only the gateway that holds the data dir's lock calls this."""
    found = read_recorded_dir(record)
    if found is not None:
        return found
    made = Path(tempfile.mkdtemp(prefix="kioku-"))  # 0700, unpredictable, ours
    tmp = record.with_name(record.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"{made}\n")
    os.replace(tmp, record)
    return made
