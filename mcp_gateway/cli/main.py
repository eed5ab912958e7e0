"""``kioku`` command line: serve, notes (add, search, list, show, edit, delete, restore),
status, stop, stats, reindex, doctor, context, worker, records.

Settings are read once here and passed down. Human output goes to stdout; logs go to
stderr (stdout carries the protocol when serving over stdio). One-shot commands log
warnings only (``-v``: info, ``-vv``: debug); ``serve`` and ``worker`` use ``log_level``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcp_gateway import __version__
from mcp_gateway.common import fsperms, logbounds, startup_gc
from mcp_gateway.common.errors import KiokuError, NotFound
from mcp_gateway.common.sections import DEFAULT_NOTE_TYPES
from mcp_gateway.common.settings import KiokuSettings, load_settings
from mcp_gateway.common.validation import PRIORITIES

log = logging.getLogger("kioku")
SERVICES = ("serve", "worker")
VERBOSE_HELP = "more log output on stderr: -v info, -vv debug"
# The commands that find ids (the services' NotFound names the id only).
NOT_FOUND_HINTS = {
    "note": ": `kioku search WORDS` or `kioku list` shows the ids",
    "record": ": `kioku records search WORDS` finds ids (they look like AUDIT-MEM-001)",
}


def _common() -> argparse.ArgumentParser:
    """Options accepted before or after the sub-command (``kioku search x -v``)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help=VERBOSE_HELP,
    )
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common()
    p = argparse.ArgumentParser(
        prog="kioku",
        description="Long-term memory for AI coding assistants, over MCP.",
        epilog="kioku COMMAND --help describes each command. Settings: config/kioku.toml, "
        "KIOKU_* environment variables.",
    )
    p.add_argument("--version", action="version", version=f"kioku {__version__}")
    p.add_argument("--data-dir", help="where the memory lives (overrides KIOKU_DATA_DIR)")
    p.add_argument("-v", "--verbose", action="count", default=0, help=VERBOSE_HELP)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    note_types = ", ".join(DEFAULT_NOTE_TYPES)

    serve = sub.add_parser(
        "serve", parents=[common], help="run the MCP server (stdio unless --http)"
    )
    serve.add_argument("--http", action="store_true", help="streamable HTTP on /mcp")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument(
        "--standalone",
        action="store_true",
        help="stdio: own the stores in-process (no shared gateway)",
    )

    add = sub.add_parser("add", parents=[common], help="add a note (prints its id)")
    add.add_argument("text", help="the note; write it so it stands alone")
    add.add_argument(
        "--type", default="note", help=f"one of {note_types} (notes.types) (default: note)"
    )
    add.add_argument(
        "--priority",
        default="",
        type=_priority,
        metavar="{normal,high,low}",
        help="high: a lesson from a correction, shown first (default: normal)",
    )
    add.add_argument("--domain", default="", help='a topic label such as "git" or "deploy"')
    add.add_argument(
        "--solved-query", default="", help="the query or request that led to the problem"
    )

    search = sub.add_parser("search", parents=[common], help="search notes and records")
    search.add_argument("query", help="a full description of the situation")
    search.add_argument(
        "--type",
        default="",
        help=f"only this type: {note_types}, or a record type (audit, fix, verification, decision)",
    )
    search.add_argument("--domain", default="", help="only this domain")
    search.add_argument("--top", type=int, default=5, help="how many results (default: 5)")
    search.add_argument("--json", action="store_true", help="print the response as JSON")

    listing = sub.add_parser(
        "list",
        parents=[common],
        help="list notes, newest written first (imported notes by the time they were written)",
    )
    listing.add_argument("--type", default="", help="only this type")
    listing.add_argument("--limit", type=int, default=50, help="how many (default: 50)")
    listing.add_argument("--after", default="", help="continue after this note id")
    listing.add_argument("--json", action="store_true", help="print the result as JSON")

    show = sub.add_parser("show", parents=[common], help="one note with its history")
    show.add_argument("id", help="note id (search and list show them)")
    show.add_argument("--json", action="store_true", help="print the result as JSON")

    edit = sub.add_parser(
        "edit", parents=[common], help="change a note (history keeps the old values)"
    )
    edit.add_argument("id", help="note id")
    for name in ("text", "type", "domain", "solved-query"):
        edit.add_argument(f"--{name}", help=f"the new {name} (unchanged when omitted)")
    edit.add_argument(
        "--priority",
        type=_priority,
        metavar="{normal,high,low}",
        help="the new priority (unchanged when omitted)",
    )

    for name, text in (("delete", "forget a note (restorable)"), ("restore", "undo a delete")):
        sub.add_parser(name, parents=[common], help=text).add_argument("id", help="note id")

    ui = sub.add_parser(
        "ui", parents=[common], help="open the memory browser (signed in by a one-time link)"
    )
    ui.add_argument("--port", dest="ui_port", type=int, default=0, help="loopback port")
    ui.add_argument("--no-browser", action="store_true", help="only print the link")
    ui.add_argument("--grant", default="default", help="sign in as this grant")
    ui.add_argument("--link", metavar="URL", help="print a sign-in link for a gateway at URL")

    stats = sub.add_parser("stats", parents=[common], help="counts, index state, queue state")
    stats.add_argument("--json", action="store_true", help="print the result as JSON")
    status = sub.add_parser(
        "status", parents=[common], help="the owning process, its clients and stores"
    )
    status.add_argument("--json", action="store_true", help="print the result as JSON")
    stop = sub.add_parser("stop", parents=[common], help="stop the process that owns the data dir")
    stop.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for it (default: 30)"
    )
    stop.add_argument(
        "--force",
        action="store_true",
        help="stop it even with editors attached (their next call starts a new daemon)",
    )
    sub.add_parser(
        "reindex",
        parents=[common],
        help="rebuild the search index beside the live one, then swap",
    )
    sub.add_parser("doctor", parents=[common], help="check configuration, stores and model")
    sub.add_parser("context", parents=[common], help="regenerate session_context.md now")

    export = sub.add_parser(
        "export", parents=[common], help="every note and record, with history and links"
    )
    export.add_argument("-o", "--output", help="write to this file (default: stdout)")
    export.add_argument(
        "--format", choices=["jsonl", "markdown"], default="jsonl", help="(default: jsonl)"
    )
    importer = sub.add_parser(
        "import",
        parents=[common],
        help="a kioku export, a server-memory JSONL graph, or a folder of .md notes",
    )
    importer.add_argument("source", help="file or folder to import (idempotent)")
    importer.add_argument(
        "--no-wait",
        action="store_true",
        help="return once written; by default a running kioku's embedding progress is "
        "shown on stderr until every note has its vector",
    )

    worker = sub.add_parser(
        "worker", parents=[common], help="run a job worker (needs KIOKU_REDIS_URL)"
    )
    worker.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    worker.add_argument("--check", action="store_true", help="health check exit code")

    from mcp_gateway.cli.records import add_records_parser

    add_records_parser(sub, common)
    return p


def _priority(value: str) -> str:
    """``normal`` (or "") is no priority: the stored value is the empty string."""
    value = value.strip().lower()
    value = "" if value == "normal" else value
    if value not in PRIORITIES:
        raise argparse.ArgumentTypeError(f"{value!r}: use normal, high or low")
    return value


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


def _log_level(args: argparse.Namespace, settings: KiokuSettings) -> str:
    verbose = int(getattr(args, "verbose", 0) or 0)
    if verbose:
        return "DEBUG" if verbose > 1 else "INFO"
    return settings.log_level if args.command in SERVICES else "WARNING"


def _check_args(args: argparse.Namespace, settings: KiokuSettings) -> None:
    """Argument checks that need the settings (the same rules as the MCP tools)."""
    if args.command == "search" and args.type:
        from mcp_gateway.common.validation import choice
        from mcp_gateway.records.model import RECORD_TYPES

        args.type = choice(args.type, "type", sorted({*settings.notes.types, *RECORD_TYPES}))


def main(argv: list[str] | None = None) -> int:
    fsperms.private_umask()  # SQLite, WAL, logs, index, exports: owner-only files
    args = _parser().parse_args(argv)
    # warnings while reading the settings (unknown KIOKU_* variables) need a handler
    # repeated messages are counted, not each written (logbounds: a flood of errors)
    logbounds.configure("WARNING", fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = _settings(args)
        _check_args(args, settings)
    except KiokuError as exc:  # config mistakes and bad arguments: one line each
        for line in str(exc).splitlines():
            print(f"kioku: {line}", file=sys.stderr)
        return 2
    logging.getLogger().setLevel(_log_level(args, settings))
    try:
        return _dispatch(args, settings)
    except NotFound as exc:
        print(f"kioku: {exc}{NOT_FOUND_HINTS.get(exc.kind, '')}", file=sys.stderr)
        return 1
    except KiokuError as exc:
        print(f"kioku: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`kioku status | head -1`): no traceback, and none at exit
        # when Python flushes stdout again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


# The commands that open the stores and models (``client.connect``, the owner's start),
# which turn the garbage collector back on once they are open (``common.startup_gc``);
# every other command turns it on here.
OPENING = frozenset(
    {"add", "search", "list", "show", "edit", "delete", "restore", "stats", "reindex"}
    | {"doctor", "context", "export", "import", "records", "serve"}
)


def _dispatch(args: argparse.Namespace, settings: KiokuSettings) -> int:
    if args.command not in OPENING:
        startup_gc.release()
    if args.command == "ui":
        from mcp_gateway.cli.ui_launch import serve_ui

        return serve_ui(
            settings,
            port=args.ui_port,
            open_browser=not args.no_browser,
            grant=args.grant,
            link=args.link or "",
        )
    if args.command == "serve":
        if not args.http and not args.standalone:
            # an editor waits on this start at every launch: the proxy path imports what
            # it uses only, not the owner's modules (seconds: the server, the stores)
            from mcp_gateway.daemon.stdio_proxy import proxies, run_proxy

            startup_gc.release()  # the proxy opens nothing
            if proxies(settings):
                run_proxy(settings)
                return 0
        from mcp_gateway.daemon.owner import serve

        return serve(settings, http=args.http, standalone=args.standalone)
    if args.command == "worker":
        return _run_worker(args)
    from mcp_gateway.cli import commands, stopping

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
        "stop": stopping.stop,
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
    # SIGTERM stays held across the exec (the entry point held it; a signal mask survives
    # exec) until the worker handles it: one sent in between stops it cleanly
    os.execve(sys.executable, argv, env)


if __name__ == "__main__":
    raise SystemExit(main())
