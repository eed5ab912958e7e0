"""The memory browser: a small server-rendered web UI at /ui/ (see docs/ui.md).

- ``ui_mount(settings, app_or_ref, verifier=..., allowed_hosts=...)`` is a
  ``Mount("/ui", ...)`` route for any Starlette app; ``mount_ui(starlette_app, ...)``
  inserts it into an MCP server's app. Pass the opened ``AppContext``, or an ``AppRef``
  whose ``set`` is given to ``create_server(on_app=...)`` when the server opens it.

``kioku ui`` (join or start the data dir's local gateway, serve the UI on a loopback
port, open the browser with a one-time link) is a client of the daemon and lives with
the CLI (``cli.ui_launch``): the browser is what the daemon serves, never a caller of it.
"""

from __future__ import annotations

from mcp_gateway.ui.routes import build_ui, mount_ui, ui_mount
from mcp_gateway.ui.web import AppRef, Ui

__all__ = ["AppRef", "Ui", "build_ui", "mount_ui", "ui_mount"]
