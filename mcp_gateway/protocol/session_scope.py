"""A stdio session's own per-request settings, held for the length of its session.

An editor's ``kioku serve`` proxies to the shared owner, which was started with its own
settings. The proxy's ``namespace``, ``read_namespaces`` and ``project`` are this
session's, not the owner's: the proxy sends them as the first line of its connection
(``PREAMBLE``), and the session socket sets them here for the task that runs the
session; every handler it starts inherits them (context variables are copied into the
tasks a task starts). ``http_auth.request_scope`` and the tools read them; a bearer
token's grant still wins over HTTP, where no preamble exists.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from mcp_gateway.common.access import Scope

# the method of the proxy's first line: a JSON-RPC notification, so an owner that does
# not know it (an older install) drops it like any unknown notification
PREAMBLE = "notifications/kioku/session"

_scope: ContextVar[Scope | None] = ContextVar("kioku_session_scope", default=None)
_project: ContextVar[str | None] = ContextVar("kioku_session_project", default=None)


def set_session(scope: Scope | None, project: str) -> None:
    """Called by the task that runs one session, before it starts serving (``scope``
    None: the owner's)."""
    _scope.set(scope)
    _project.set(project or None)


def session_scope() -> Scope | None:
    return _scope.get()


def project_or(default: str) -> str:
    """This session's configured project, else ``default`` (the owner's)."""
    return _project.get() or default


def preamble_params(message: Any) -> dict[str, Any] | None:
    """The params of a preamble line already parsed as JSON, else None."""
    if isinstance(message, dict) and message.get("method") == PREAMBLE:
        params = message.get("params")
        return params if isinstance(params, dict) else {}
    return None
