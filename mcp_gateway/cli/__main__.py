"""``python -m mcp_gateway.cli``: the ``kioku`` command."""

from mcp_gateway.cli import main

raise SystemExit(main())
