"""``kioku`` command line: serve, notes (add, search, list, show, edit, delete, restore),
status, stop, stats, reindex, doctor, context, worker, records.

Settings are read once here and passed down. Human output goes to stdout; logs go to
stderr (stdout carries the protocol when serving over stdio).
"""

from __future__ import annotations

import argparse
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

    listing = sub.add_parser("list", help="list notes, newest first")
    listing.add_argument("--type", default="")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--after", default="", help="continue after this note id")
    listing.add_argument("--json", action="store_true")

    show = sub.add_parser("show", help="one note with its history")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")

    edit = sub.add_parser("edit", help="change a note (history keeps the old values)")
    edit.add_argument("id")
    for name in ("text", "type", "priority", "domain", "solved-query"):
        edit.add_argument(f"--{name}")

    for name, text in (("delete", "forget a note (restorable)"), ("restore", "undo a delete")):
        sub.add_parser(name, help=text).add_argument("id")

    ui = sub.add_parser("ui", help="open the memory browser (signed in by a one-time link)")
    ui.add_argument("--port", dest="ui_port", type=int, default=0, help="loopback port")
    ui.add_argument("--no-browser", action="store_true", help="only print the link")
    ui.add_argument("--grant", default="default", help="sign in as this grant")
    ui.add_argument("--link", metavar="URL", help="print a sign-in link for a gateway at URL")

    sub.add_parser("stats", help="counts, index state, queue state")
    status = sub.add_parser("status", help="the owning process, its clients and stores")
    status.add_argument("--json", action="store_true")
    stop = sub.add_parser("stop", help="stop the process that owns the data dir")
    stop.add_argument("--timeout", type=float, default=30.0)
    sub.add_parser("reindex", help="rebuild the search index beside the live one, then swap")
    sub.add_parser("doctor", help="check configuration, stores and model")
    sub.add_parser("context", help="regenerate session_context.md now")

    export = sub.add_parser("export", help="every note and record, with history and links")
    export.add_argument("-o", "--output", help="write to this file (default: stdout)")
    export.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
    importer = sub.add_parser(
        "import", help="a kioku export, a server-memory JSONL graph, or a folder of .md notes"
    )
    importer.add_argument("source", help="file or folder to import (idempotent)")

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
    if args.command == "ui":
        from .ui.launch import serve_ui

        return serve_ui(
            settings,
            port=args.ui_port,
            open_browser=not args.no_browser,
            grant=args.grant,
            link=args.link or "",
        )
    if args.command == "serve":
        from .owner import serve

        return serve(settings, http=args.http, standalone=args.standalone)
    if args.command == "worker":
        return _run_worker(args)
    from . import commands

    handlers: dict[str, Callable[[argparse.Namespace, KiokuSettings], Awaitable[int]]] = {
        "add": commands.add,
        "search": commands.search,
        "list": commands.list_notes,
        "show": commands.show,
        "edit": commands.edit,
        "delete": commands.delete,
        "restore": commands.delete,
        "stats": commands.stats,
        "status": commands.status,
        "stop": commands.stop,
        "reindex": commands.reindex,
        "doctor": commands.doctor,
        "context": commands.context,
        "export": commands.export,
        "import": commands.import_,
        "records": commands.records,
    }
    return anyio.run(handlers[args.command], args, settings)


def _run_worker(args: argparse.Namespace) -> int:
    """Workers are their own processes (``python -m workers``): the gateway package never
    imports them. This process becomes the worker (exec), so signals reach it; the same
    environment (settings) and data dir go along."""
    import os

    argv = [sys.executable, "-m", "workers"]
    argv += ["--burst"] if args.burst else []
    argv += ["--check"] if args.check else []
    env = dict(os.environ)
    if args.data_dir:
        env["KIOKU_DATA_DIR"] = args.data_dir
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


if __name__ == "__main__":
    raise SystemExit(main())
