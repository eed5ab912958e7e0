"""What a stdio proxy's session carries to the owner, and what it tells the editor.

Per-request settings (namespace, read namespaces, project) are this editor's session's:
the proxy opens each connection with them (``preamble``; the owner applies them in
``protocol.session_scope``). The owner's own settings (embedder, index, stores, search
tuning...) are the process's: ``tell_ignored`` names each one this process sets
otherwise, once, on stderr (the editor's log), with the owner's value (from its private
``owner.json``) and ``kioku stop``.
"""

from __future__ import annotations

import json
import sys

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.owner_state import read_owner
from mcp_gateway.daemon.request_context import owner_view
from mcp_gateway.protocol.session_scope import PREAMBLE


def preamble(settings: KiokuSettings) -> bytes:
    """The connection's first line: this session's per-request settings."""
    params = {
        "namespace": settings.namespace,
        "read_namespaces": list(settings.read_namespaces),
        "project": settings.project,
    }
    message = {"jsonrpc": "2.0", "method": PREAMBLE, "params": params}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def tell_ignored(settings: KiokuSettings, paths: gw.GatewayPaths) -> None:
    """One stderr line per owner setting this process sets otherwise (the editor's
    log shows it): the session runs with the owner's."""
    owner = read_owner(paths) or {}
    theirs = owner.get("settings")
    if not isinstance(theirs, dict):
        return
    for name, mine in sorted(owner_view(settings).items()):
        if name in theirs and theirs[name] != mine:
            print(
                f"kioku: the running kioku (pid {owner.get('pid', '?')}) uses {name} = "
                f"{theirs[name]}; this session's {mine} is ignored: `kioku stop`, then "
                "start the session again",
                file=sys.stderr,
                flush=True,
            )
