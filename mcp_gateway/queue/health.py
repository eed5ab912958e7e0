"""Redis health for ``kioku doctor`` (the queue side of the deployment)."""

from __future__ import annotations

from arq.connections import RedisSettings, create_pool

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.queue.scheduler import QueueNames


async def check_redis(settings: KiokuSettings) -> tuple[bool, str]:
    if not settings.redis_url:
        return False, "KIOKU_REDIS_URL is not set"
    names = QueueNames.for_settings(settings)
    try:
        pool = await create_pool(RedisSettings.from_dsn(settings.redis_url))
    except Exception as exc:
        return False, f"cannot connect to {settings.redis_url}: {exc}"
    try:
        info = await pool.info("server")
        workers = [k async for k in pool.scan_iter(match=f"{names.queue}:health-check:*")]
        detail = (
            f"redis {info.get('redis_version', '?')} at {settings.redis_url}, "
            f"{len(workers)} live worker(s) on {names.queue}"
        )
        return True, detail
    except Exception as exc:
        return False, f"redis at {settings.redis_url} failed: {exc}"
    finally:
        await pool.aclose(close_connection_pool=True)
