"""The command-line door: ``kioku`` and its commands, through the owner or in-process."""

from mcp_gateway.cli.main import main

__all__ = ["main"]
