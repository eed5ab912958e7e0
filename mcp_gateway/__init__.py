"""kioku: long-term memory for AI coding assistants, over MCP."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kioku")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
