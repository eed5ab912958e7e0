"""Helpers shared by the MCP tool modules: services and scope access, results, error
translation."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from mcp_gateway.common import redact
from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import KiokuError, NotFound
from mcp_gateway.protocol.http_auth import request_scope
from mcp_gateway.services import Services

log = logging.getLogger(__name__)

# What an MCP client can call to find ids (the services' NotFound names the id only).
NOT_FOUND_HINTS = {
    "note": "; search_memory shows the ids",
    "record": "; find ids with record_search (ids look like AUDIT-MEM-001)",
}

P = ParamSpec("P")
R = TypeVar("R")


def services_from(ctx: Context[Any, Any]) -> Services:
    services: Services = ctx.request_context.lifespan_context
    return services


def scope_of(ctx: Context[Any, Any]) -> Scope:
    return request_scope(services_from(ctx).app.settings)


def result(text: str, model: BaseModel) -> CallToolResult:
    """Readable text for the assistant plus the same facts as ``structured_content``."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn our typed errors into clean tool errors; log anything unexpected.

    The assistant sees only the message (``is_error=True``), never a traceback. The
    docstring becomes the tool's description: dedented here (Python 3.11 keeps the
    source indentation, which would reach the client as 8 leading spaces per line).
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except ToolError:
            raise
        except NotFound as exc:
            raise ToolError(f"{exc}{NOT_FOUND_HINTS.get(exc.kind, '')}") from exc
        except KiokuError as exc:
            # a message quoting a URL (an index or embedder server) loses its password
            raise ToolError(redact.scrub(str(exc))) from exc
        except Exception as exc:
            log.exception("tool %s failed unexpectedly", fn.__name__)
            raise ToolError(
                f"{fn.__name__} failed on an internal error ({type(exc).__name__}); "
                "nothing was changed. The server log has the details."
            ) from exc

    wrapper.__doc__ = inspect.cleandoc(fn.__doc__ or "")
    return wrapper
