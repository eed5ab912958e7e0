"""``kioku`` command line: serve, add, search, stats, reindex, doctor, worker, records.

Settings are read once here and passed down. Human output goes to stdout; logs go to
stderr (stdout carries the protocol when serving over stdio).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .errors import KiokuError
from .settings import KiokuSettings, load_settings

log = logging.getLogger("kioku")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kioku", description="Long-term memory for AI assistants")
    p.add_argument("--data-dir", help="override KIOKU_DATA_DIR")
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the MCP server (stdio unless --http)")
    serve.add_argument("--http", action="store_true", help="streamable HTTP on /mcp")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument(
        "--standalone",
        action="store_true",
        help="stdio: own the stores in-process (no shared gateway)",
    )

    add = sub.add_parser("add", help="add a note")
    add.add_argument("text")
    add.add_argument("--type", default="note")
    add.add_argument("--priority", default="")
    add.add_argument("--domain", default="")
    add.add_argument("--solved-query", default="")

    search = sub.add_parser("search", help="search memories")
    search.add_argument("query")
    search.add_argument("--type", default="")
    search.add_argument("--domain", default="")
    search.add_argument("--top", type=int, default=5)
    search.add_argument("--json", action="store_true")

    sub.add_parser("stats", help="counts, index state, queue state")
    sub.add_parser("reindex", help="rebuild the search index from SQLite")
    sub.add_parser("doctor", help="check configuration, stores and model")
    sub.add_parser("export", help="regenerate session_context.md now")

    worker = sub.add_parser("worker", help="run a job worker (needs KIOKU_REDIS_URL)")
    worker.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    worker.add_argument("--check", action="store_true", help="health check exit code")

    from .cli_records import add_records_parser

    add_records_parser(sub)
    return p


def _settings(args: argparse.Namespace) -> KiokuSettings:
    overrides: dict[str, Any] = {}
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    settings = load_settings(**overrides)
    if getattr(args, "host", None):
        settings.http.host = args.host
    if getattr(args, "port", None):
        settings.http.port = args.port
    return settings


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except Exception as exc:  # pydantic ValidationError: show it, not a traceback
        print(f"kioku: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return _dispatch(args, settings)
    except KiokuError as exc:
        print(f"kioku: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace, settings: KiokuSettings) -> int:
    if args.command == "serve":
        from .server import serve

        serve(settings, http=args.http, standalone=args.standalone)
        return 0
    if args.command == "worker":
        from workers.main import run_worker

        return run_worker(settings, burst=args.burst, check=args.check)
    from . import commands

    handlers: dict[str, Callable[[argparse.Namespace, KiokuSettings], Awaitable[int]]] = {
        "add": commands.add,
        "search": commands.search,
        "stats": commands.stats,
        "reindex": commands.reindex,
        "doctor": commands.doctor,
        "export": commands.export_now,
        "records": commands.records,
    }
    return anyio.run(handlers[args.command], args, settings)


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
