"""The generated bearer token of ``kioku serve --http`` on loopback.

Loopback is not private: every local user can connect to 127.0.0.1. So when neither
``http.token`` nor ``http.grants`` is set, the gateway does not serve without a token:
it generates one (256 bits) into ``<data_dir>/http.token``, created 0600 in the 0700
data dir, and requires it. ``kioku status`` shows it (``local_token``); clients send it
as ``Authorization: Bearer <token>``. Verified by
``tests/test_security_http.py::test_loopback_http_requires_the_generated_token``.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from mcp_gateway.common import fsperms
from mcp_gateway.common.errors import StoreUnavailable

TOKEN_FILE = "http.token"


def token_path(data_dir: Path) -> Path:
    return data_dir / TOKEN_FILE


def read_token(data_dir: Path) -> str | None:
    """The generated token, or None if there is none (or it is not safe to trust)."""
    path = token_path(data_dir)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        text = path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def local_token(data_dir: Path) -> str:
    """The data dir's HTTP token, generated (0600) on first use."""
    existing = read_token(data_dir)
    if existing:
        return existing
    fsperms.secure_data_dir(data_dir)
    path = token_path(data_dir)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}")
    try:
        fd = fsperms.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(token + "\n")
        try:
            os.link(tmp, path)  # atomic and never overwrites: two starts agree on one token
        except FileExistsError:
            pass
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the HTTP token file {path}: {exc.strerror}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    found = read_token(data_dir)
    if not found:
        raise StoreUnavailable(f"the HTTP token file {path} is not usable: remove it and retry")
    return found
