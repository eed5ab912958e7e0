"""What a CLI request carries to the data dir's owner, and which settings it cannot.

A CLI beside a running owner (daemon, ``serve --http``) runs its command in the owner.
Two kinds of settings meet there:

- per request (``namespace``, ``read_namespaces``, ``project``): they travel with each
  request (``context``) and the owner runs it with them (``scope_of``). The owner's
  Unix socket is private to the owner's user, who could open the data dir with any
  namespace anyway, so the owner takes them as given;
- the owner's (embedder, index, stores, search tuning, export, queue): the process that
  opened the stores runs with its own. A CLI whose values differ is told, one line per
  setting, with the owner's value and ``kioku stop`` (``ignored``): its own values
  apply once it (or the next owner) starts with them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.settings import KiokuSettings

# Settings the owner's process is built with; the rest of the top level is per request
# (namespace, read_namespaces, project), the data dir itself (the socket's), or the
# command line's own (log level, serve's http and local-gateway options).
OWNER_SECTIONS = ("embedder", "index", "notes", "search", "export", "queue")
OWNER_FIELDS = ("qdrant_url", "redis_url")
_USERINFO = re.compile(r"//[^/@]*@")


def context(settings: KiokuSettings) -> dict[str, Any]:
    """The per-request settings and this process's view of the owner's settings."""
    return {
        "namespace": settings.namespace,
        "read_namespaces": list(settings.read_namespaces),
        "project": settings.project,
        "owner_settings": owner_view(settings),
    }


def owner_view(settings: KiokuSettings) -> dict[str, str]:
    """``section.field`` -> value as text, for the settings that belong to the owner;
    secrets left out, credentials in URLs masked."""
    dumped = settings.model_dump(mode="json", include={*OWNER_SECTIONS, *OWNER_FIELDS})
    flat: dict[str, str] = {}
    for key, value in dumped.items():
        items = value.items() if isinstance(value, dict) else [("", value)]
        for field, item in items:
            name = f"{key}.{field}" if field else key
            if "api_key" in name or "token" in name:
                continue
            text = item if isinstance(item, str) else json.dumps(item, sort_keys=True)
            flat[name] = _USERINFO.sub("//***@", text)
    return flat


def scope_of(ctx: dict[str, Any], default: Scope) -> Scope:
    """The scope a request asks for (``default`` when it names none)."""
    namespace = ctx.get("namespace")
    if not namespace:
        return default
    read = ctx.get("read_namespaces") or []
    if not isinstance(namespace, str) or not isinstance(read, list):
        raise InvalidInput("bad request context: namespace must be text, read_namespaces a list")
    names = [namespace, *[str(n) for n in read if n != namespace]]
    if any(not n.strip() or len(n) > 128 for n in names):
        raise InvalidInput("bad request context: empty or over-long namespace")
    return Scope(namespace, tuple(names))


def ignored(ctx: dict[str, Any], owner: KiokuSettings) -> list[dict[str, str]]:
    """The owner's settings the request's process sets otherwise: each with both values."""
    theirs = ctx.get("owner_settings")
    if not isinstance(theirs, dict):
        return []
    mine = owner_view(owner)
    return [
        {"setting": name, "owner": mine[name], "yours": str(value)}
        for name, value in sorted(theirs.items())
        if name in mine and mine[name] != str(value)
    ]
