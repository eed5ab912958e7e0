"""The session context: what the next chat session should know before it starts.

One use case for every door: the MCP resource and prompt ``kioku://session_context``,
the memory browser's context page and ``kioku context`` (which writes
``session_context.md``) all render it through ``jobs.session_context.for_reader``, so a
reader sees the same document at each.
"""

from __future__ import annotations

from mcp_gateway.common.access import Scope
from mcp_gateway.jobs import session_context as export
from mcp_gateway.jobs import tasks
from mcp_gateway.queue.run import JobRun
from mcp_gateway.services.app import AppContext


class ContextService:
    def __init__(self, app: AppContext) -> None:
        self.app = app

    async def render(self, scope: Scope) -> str:
        """The context ``scope`` reads, rendered now (its own namespace, then each one
        it may also read under a heading naming it)."""
        _snap, content = await export.for_reader(self.app.job_context, scope)
        return content

    async def export(self) -> str:
        """Write ``session_context.md`` (the data dir's own scope) now; its path."""
        await tasks.export_session_context(JobRun(self.app.job_context))
        return str(self.app.settings.session_context_path)
