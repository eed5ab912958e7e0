"""Refuse writes cleanly before the disk is full, instead of dying of SIGBUS.

The edge index writes through memory-mapped, sparse segment files: when the disk
fills up, touching a page that has no block behind it raises SIGBUS and kills the
gateway (issue 10: the HTTP gateway died this way while background indexing ran).
SQLite copes (it returns "database or disk is full"), an mmapped write cannot. So
every write -- SQLite transactions (``Database``) and index writes (``space_guard``)
-- first checks that the data dir's file system keeps ``reserve_bytes`` free, and
otherwise fails with ``StoreUnavailable`` ("the disk is nearly full ... nothing was
stored"); jobs retry later, tools report it, the process stays up. The reserve
(``index.reserve_free_mb``, default 48 MB) exceeds one edge WAL segment (32 MB,
sparse), the largest block of pages the engine may touch after the check. Making the
index files non-sparse up front was tried: it costs ~200 MB per data dir, so no.

Verified by ``tests/test_security_local.py::test_disk_full_during_indexing_keeps_the_gateway_up``
(data dir on a small tmpfs, filled with dd while notes are added and indexed).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from mcp_gateway.common.errors import StoreUnavailable

DEFAULT_RESERVE_BYTES = 48 * 1024 * 1024


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return int(st.f_bavail) * int(st.f_frsize)


def require_space(path: Path, reserve_bytes: int) -> None:
    """StoreUnavailable unless ``path``'s file system has ``reserve_bytes`` free."""
    if reserve_bytes <= 0:
        return
    try:
        free = free_bytes(path)
    except OSError:
        return  # cannot tell (path gone): the write itself will report
    if free < reserve_bytes:
        raise StoreUnavailable(
            f"the disk is nearly full ({free // 2**20} MB free; kioku keeps "
            f"{reserve_bytes // 2**20} MB in reserve so its index never runs out mid-write): "
            "free space, then retry; nothing was stored"
        )


def space_guard(path: Path, reserve_bytes: int) -> Callable[[], None]:
    """``require_space`` bound to the index's directory, for ``EdgeIndex(write_guard=)``:
    it runs in each write's worker thread, just before the engine touches its files."""
    return functools.partial(require_space, path, reserve_bytes)
