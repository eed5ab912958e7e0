"""``python -m mcp_gateway.daemon.boot --data-dir DIR``: the shared local daemon's entry
point (``local_gateway.spawn_daemon`` starts it).

The models start loading before the server is imported (``embedders.preload``): the
imports of ``daemon.owner`` (the MCP SDK, uvicorn, starlette, the stores) took most of
the seconds an editor's first search waited for after ``initialize``, and the loading
runs beside them. Then ``owner.main`` runs as before.
"""

from __future__ import annotations

import argparse
import logging
import sys

from mcp_gateway.common import fsperms
from mcp_gateway.common.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_gateway.daemon.boot")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--lock-fd", type=int, help="the data dir's lock, taken by the spawner")
    args = parser.parse_args(argv)
    fsperms.private_umask()  # logs, SQLite, index: owner-only whatever the parent's umask
    settings = load_settings(data_dir=args.data_dir)
    logging.basicConfig(  # before the loading logs anything (owner.main's call is a no-op)
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
    )
    from mcp_gateway.embedders import preload

    preload.begin(settings.embedder)
    from mcp_gateway.daemon import owner

    return owner.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
