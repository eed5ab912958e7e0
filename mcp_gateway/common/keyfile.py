"""Private secrets kept in the data dir (0600, created once), and the owner API's key.

``load_secret(data_dir, name)`` reads or creates a 32-byte random secret in
``data_dir/name``. Whoever can read the data dir can read every memory anyway, so a key
file there grants nothing new; it only separates *the owner's user* from *whatever
reaches the owner's socket on its behalf*.

The owner's Unix socket carries the admin API and MCP (``/api``, ``/mcp``: full access
to every namespace, no tokens) beside the memory browser (``/ui``). ``kioku ui``
forwards a TCP port to that socket, so the peer-uid check there sees the owner's own
uid for every browser request. The admin API and MCP therefore also require
``OWNER_HEADER`` carrying ``owner.key``, which the CLI reads from the data dir and the
forwarder never sends: a bug in the forwarder's routing reaches, at worst, the UI's own
sign-in wall.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path

log = logging.getLogger(__name__)

OWNER_KEY_FILE = "owner.key"
OWNER_HEADER = "x-kioku-owner-key"


def load_secret(data_dir: Path, name: str) -> bytes:
    """The secret in ``data_dir/name``; created 0600 on first use (O_EXCL: two racing
    processes end up with the same file). A data dir that cannot hold it gets a
    per-process secret (logged): what it protects then ends with the process."""
    path = data_dir / name
    for _ in range(50):
        try:
            secret = bytes.fromhex(path.read_text().strip())
        except FileNotFoundError:
            break
        except (OSError, ValueError) as exc:
            log.warning("%s unreadable (%s); using a per-process key", path, exc)
            return secrets.token_bytes(32)
        if len(secret) >= 32:
            return secret
        time.sleep(0.02)  # another process created it a moment ago and is writing it
    else:
        log.warning("%s is not a key; using a per-process key", path)
        return secrets.token_bytes(32)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return load_secret(data_dir, name)
    except OSError as exc:
        log.warning("cannot create %s (%s); using a per-process key", path, exc)
        return secrets.token_bytes(32)
    secret = secrets.token_bytes(32)
    try:
        os.write(fd, secret.hex().encode())
    finally:
        os.close(fd)
    return secret


def owner_key(data_dir: Path) -> str:
    """The value of ``OWNER_HEADER`` for the owner of ``data_dir``."""
    return load_secret(data_dir, OWNER_KEY_FILE).hex()
