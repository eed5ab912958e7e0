"""The project a request works on, derived by the server, not taken from the model.

When the client offers workspace roots (VS Code, Cursor and Claude Code do), the first
root's folder name becomes the project code (``~/src/billing-api`` -> ``BILLING_API``);
otherwise the configured ``project`` applies. The answer is cached per session: roots
rarely change and asking costs a round trip to the client.
"""

from __future__ import annotations

import logging
import re
import warnings
import weakref
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from mcp.server.mcpserver import Context

log = logging.getLogger(__name__)

_cache: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def project_code(folder: str) -> str:
    code = re.sub(r"[^A-Za-z0-9]+", "_", folder).strip("_").upper()[:16].strip("_")
    return code


async def session_project(ctx: Context[Any, Any], default: str) -> str:
    session = ctx.session
    if session in _cache:
        return _cache[session]
    project = default
    caps = ctx.client_capabilities
    if caps is not None and caps.roots is not None:
        try:
            # roots are deprecated from protocol 2026-07-28 but still what editors send
            with anyio.fail_after(2), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                roots = (await session.list_roots()).roots
            if roots:
                folder = PurePosixPath(unquote(urlparse(str(roots[0].uri)).path)).name
                project = project_code(folder) or default
        except Exception as exc:  # a client that cannot answer keeps the default
            log.info("workspace roots unavailable (%s); project %s", exc, default)
    _cache[session] = project
    return project
