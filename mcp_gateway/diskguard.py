"""Refuse writes cleanly before the disk is full, instead of dying of SIGBUS.

The edge index writes through memory-mapped, sparse segment files: when the disk
fills up, touching a page that has no block behind it raises SIGBUS and kills the
gateway (issue 10: the HTTP gateway died this way while background indexing ran).
SQLite copes (it returns "database or disk is full"), an mmapped write cannot. So
every write -- SQLite transactions (``Database``) and index writes (``SpaceGuarded``)
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

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from .errors import StoreUnavailable
from .types import IndexFilter, IndexPoint

log = logging.getLogger(__name__)

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


class SpaceGuarded:
    """An ``Index`` whose writes are refused while the disk is nearly full."""

    def __init__(self, inner: Any, directory: Path, reserve_bytes: int) -> None:
        self.inner, self.directory, self.reserve_bytes = inner, directory, reserve_bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _check(self) -> None:
        await anyio.to_thread.run_sync(require_space, self.directory, self.reserve_bytes)

    async def open(self) -> None:
        await self.inner.open()

    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        await self._check()
        await self.inner.upsert(points)

    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        await self._check()
        await self.inner.set_payload(ids, payload)

    async def delete(self, ids: Sequence[str]) -> None:
        await self._check()
        await self.inner.delete(ids)

    async def clear(self) -> None:
        await self.inner.clear()

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        return await self.inner.search(*args, **kwargs)

    async def search_channels(self, *args: Any, **kwargs: Any) -> Any:
        return await self.inner.search_channels(*args, **kwargs)

    async def present(self, ids: Sequence[str]) -> dict[str, bool]:
        result: dict[str, bool] = await self.inner.present(ids)
        return result

    async def count(self, flt: IndexFilter | None = None) -> int:
        return int(await self.inner.count(flt))

    async def close(self) -> None:
        await self.inner.close()
