"""Coordination primitives for singleton jobs: a generation counter and a lock.

The same job code runs under arq (``RedisCoordinator``: every worker process shares
the keys) and under the in-process runner (``MemoryCoordinator``: one event loop, so
plain dicts are atomic between awaits).

The generation pattern (see ``docs/queue.md``): a request reads the generation ``g``
and enqueues the job with id ``name:g``. A run takes the lock, *then* increments the
generation, *then* reads its work. A request that arrives before the increment is
absorbed by the queued or running ``name:g`` (which reads the work afterwards); one
that arrives after it enqueues ``name:g+1``, exactly one follow-up however many
requests there are.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # not imported by the embedded runner (``run.Retry``)
    from redis.asyncio import Redis

# Compare-and-delete: release the lock only if this run still owns it.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""


class Coordinator(Protocol):
    async def generation(self, name: str) -> int:
        """The current generation of singleton ``name`` (0 if never run)."""

    async def advance(self, name: str) -> int:
        """Increment and return the generation (called by the run holding the lock)."""

    async def acquire(self, name: str, token: str, ttl_ms: int) -> bool:
        """Take the lock for ``name`` unless someone holds it; it expires after ``ttl_ms``."""

    async def release(self, name: str, token: str) -> bool:
        """Release the lock if ``token`` still owns it."""

    async def count_failure(self, name: str) -> int:
        """Count one more consecutive transient failure of ``name``; return the count."""

    async def clear_failures(self, name: str) -> None: ...


class RedisCoordinator:
    """Keys ``{prefix}gen:{name}`` and ``{prefix}lock:{name}`` in the queue's Redis."""

    def __init__(self, redis: Redis, prefix: str = "kioku:") -> None:
        self.redis, self.prefix = redis, prefix

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    async def generation(self, name: str) -> int:
        value = await self.redis.get(self._key("gen", name))
        return int(value) if value is not None else 0

    async def advance(self, name: str) -> int:
        return int(await self.redis.incr(self._key("gen", name)))

    async def acquire(self, name: str, token: str, ttl_ms: int) -> bool:
        return bool(await self.redis.set(self._key("lock", name), token, nx=True, px=ttl_ms))

    async def release(self, name: str, token: str) -> bool:
        released = await self.redis.eval(_RELEASE, 1, self._key("lock", name), token)  # type: ignore[misc]
        return bool(released)

    async def count_failure(self, name: str) -> int:
        key = self._key("fails", name)
        count = int(await self.redis.incr(key))
        await self.redis.expire(key, 86_400)
        return count

    async def clear_failures(self, name: str) -> None:
        await self.redis.delete(self._key("fails", name))


class MemoryCoordinator:
    """The same contract inside one event loop (the embedded, Redis-less default)."""

    def __init__(self) -> None:
        self._generations: dict[str, int] = {}
        self._locks: dict[str, tuple[str, float]] = {}
        self._failures: dict[str, int] = {}

    async def generation(self, name: str) -> int:
        return self._generations.get(name, 0)

    async def advance(self, name: str) -> int:
        self._generations[name] = self._generations.get(name, 0) + 1
        return self._generations[name]

    async def acquire(self, name: str, token: str, ttl_ms: int) -> bool:
        now = time.monotonic()
        held = self._locks.get(name)
        if held is not None and held[1] > now:
            return False
        self._locks[name] = (token, now + ttl_ms / 1000)
        return True

    async def release(self, name: str, token: str) -> bool:
        held = self._locks.get(name)
        if held is None or held[0] != token:
            return False
        del self._locks[name]
        return True

    async def count_failure(self, name: str) -> int:
        self._failures[name] = self._failures.get(name, 0) + 1
        return self._failures[name]

    async def clear_failures(self, name: str) -> None:
        self._failures.pop(name, None)
