"""The CLI's memory when it owns the data dir for one command: the use cases in-process.

Kept apart from ``client`` so that a command talking to a running owner never imports
the stores, the index or the models (``kioku search`` beside a daemon starts faster).
"""

from __future__ import annotations

from typing import Any

import anyio

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.types import Progress, RebuildStatus
from mcp_gateway.services import Services
from mcp_gateway.services.api import call


class LocalMemory:
    remote = False

    def __init__(self, services: Services) -> None:
        self.services = services
        self.scope = settings_scope(services.app.settings)

    async def call(self, op: str, **args: Any) -> Any:
        return await call(self.services, self.scope, op, args)

    async def status(self) -> dict[str, Any]:
        return {"owner": None, **(await self.services.maintenance.stats())}

    async def reindex(self, progress: Progress) -> RebuildStatus:
        rebuilder = self.services.rebuild
        async with anyio.create_task_group() as tg:

            async def report() -> None:
                while True:
                    progress(rebuilder.status)
                    await anyio.sleep(0.5)

            tg.start_soon(report)
            try:
                final = await rebuilder.rebuild()
            finally:
                tg.cancel_scope.cancel()
        progress(final)
        return final
