"""How ``kioku ui`` hands its one-time sign-in link to the browser without exposing it.

A browser is started with its URL on the command line, and every local user can read a
process's command line (``/proc/PID/cmdline``): a code passed there was redeemed by
another user before the owner's browser got to it. So the code goes into a 0600 HTML
page in the 0700 data dir that sends the browser on to the sign-in URL (a meta refresh),
and the browser is opened on that page's ``file://`` path, which reveals nothing. The
page is removed once a sign-in through the forwarder succeeds, when the code expires,
and when ``kioku ui`` exits; pages left by a killed ``kioku ui`` go at the next start.
(Jupyter hands its token to the browser the same way.)
"""

from __future__ import annotations

import contextlib
import html
import os
import secrets
import time
from pathlib import Path

PREFIX = "ui-signin-"


def write(data_dir: Path, url: str, ttl_s: float) -> Path:
    """A new private redirect page to ``url``; stale ones (older than ``ttl_s``) go."""
    remove_stale(data_dir, ttl_s)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = data_dir / f"{PREFIX}{secrets.token_hex(8)}.html"
    target = html.escape(url, quote=True)
    page = (
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta name="referrer" content="no-referrer">'
        f'<meta http-equiv="refresh" content="0;url={target}">'
        "<title>kioku: signing in</title></head>"
        f'<body><p><a href="{target}">Open the kioku memory browser</a></p></body></html>'
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(page)
    return path


def remove(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def remove_stale(data_dir: Path, ttl_s: float) -> None:
    """Pages whose code has expired (a killed ``kioku ui`` could not remove them)."""
    cutoff = time.time() - ttl_s
    with contextlib.suppress(OSError):
        for path in data_dir.glob(f"{PREFIX}*.html"):
            with contextlib.suppress(OSError):
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
