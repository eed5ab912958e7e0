"""``kioku records ...``: show, search, add, link, update and graph lifecycle records."""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.inputs import RecordChanges, RecordFields, fill, wire
from mcp_gateway.common.validation import terminal_safe
from mcp_gateway.records import render
from mcp_gateway.records.model import (
    ACTION_STATES,
    RECORD_TYPES,
    RELATIONS,
    STATUSES,
    RecordAdded,
    RecordGraph,
    RecordLinked,
    RecordSearchResponse,
    RecordUpdated,
    RecordView,
)
from mcp_gateway.records.reads import MAX_SEARCH_LIMIT

if TYPE_CHECKING:
    from mcp_gateway.cli.client import Memory

log = logging.getLogger(__name__)


def add_records_parser(subparsers: Any, common: argparse.ArgumentParser | None = None) -> None:
    """Add ``records`` with its sub-commands to an argparse ``subparsers`` object;
    ``common`` holds the options every sub-command accepts (-v)."""
    common = common or argparse.ArgumentParser(add_help=False)
    p = subparsers.add_parser(
        "records", parents=[common], help="durable lifecycle records (audit, fix, ...)"
    )
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")
    sub = p.add_subparsers(dest="records_command", required=True, metavar="COMMAND")
    # --json also after the sub-command (`kioku records search X --json`); SUPPRESS keeps
    # an earlier `records --json` when the sub-command does not repeat it
    each = argparse.ArgumentParser(add_help=False, parents=[common])
    each.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the structured result as JSON",
    )

    def add_parser(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help, parents=[each])
        return parser

    show = add_parser("show", help="a record with its lifecycle and history")
    show.add_argument("id", help="e.g. AUDIT-MEM-001")

    search = add_parser("search", help="full-text search of titles and contents")
    search.add_argument("query", help="words to find in titles and contents")
    search.add_argument("--type", default="", choices=RECORD_TYPES, help="only this type")
    search.add_argument(
        "--current-only", action="store_true", help="skip superseded and resolved records"
    )
    search.add_argument("--limit", type=int, default=10, help=f"1..{MAX_SEARCH_LIMIT}")

    add = add_parser("add", help="create a record (optionally linked)")
    add.add_argument("type", choices=RECORD_TYPES, help="the record type (its id prefix)")
    add.add_argument("title", help="one line")
    add.add_argument("--content", default="", help="the details")
    add.add_argument("--status", default="open", choices=STATUSES, help="(default: open)")
    add.add_argument(
        "--action-state",
        default="actionable",
        choices=ACTION_STATES,
        help="(default: actionable)",
    )
    add.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="RELATION:TARGET_ID",
        help=f"repeatable; RELATION is one of {', '.join(RELATIONS)}",
    )
    add.add_argument("--project", default="", help="project code in the id (default: settings)")

    link = add_parser("link", help="add an edge: SOURCE RELATION TARGET")
    link.add_argument("source", help="record id")
    link.add_argument("relation", choices=RELATIONS)
    link.add_argument("target", help="record id")

    update = add_parser("update", help="change fields (history keeps old values)")
    update.add_argument("id", help="record id")
    update.add_argument("--title")
    update.add_argument("--content")
    update.add_argument("--status", choices=STATUSES)
    update.add_argument("--action-state", choices=ACTION_STATES)

    graph = add_parser("graph", help="the lifecycle chain around a record as a tree")
    graph.add_argument("id", help="record id")


async def run_records_command(args: argparse.Namespace, memory: Memory) -> int:
    """Run one ``records`` sub-command; prints to stdout. Errors propagate (``KiokuError``):
    ``kioku``'s main prints them as every command does, with the CLI's hint."""
    text, model = await _dispatch(args, memory)
    # Stored text may hold control characters (records written before they were
    # refused): never let it drive the terminal (OSC 52 clipboard writes, cursor moves).
    if getattr(args, "json", False):
        dumped = json.dumps(model.model_dump(mode="json"), ensure_ascii=False, indent=2)
        print(terminal_safe(dumped, json_text=True))
    else:
        print(terminal_safe(text))
    return 0


async def _dispatch(args: argparse.Namespace, memory: Memory) -> tuple[str, BaseModel]:
    cmd = args.records_command
    if cmd == "show":
        view = RecordView.model_validate(await memory.call("records.show", id=args.id))
        return render.render_view(view), view
    if cmd == "search":
        resp = RecordSearchResponse.model_validate(
            await memory.call(
                "records.search",
                query=args.query,
                type=args.type,
                current_only=args.current_only,
                limit=args.limit,
            )
        )
        return render.render_hits(args.query, resp.hits, args.current_only), resp
    if cmd == "add":
        added = RecordAdded.model_validate(
            await memory.call(
                "records.add", **wire(fill(RecordFields, {**vars(args), "links": args.link}))
            )
        )
        return render.render_added(added.record, added.links, added.status), added
    if cmd == "link":
        linked = RecordLinked.model_validate(
            await memory.call(
                "records.link", source=args.source, relation=args.relation, target=args.target
            )
        )
        return render.render_edge(linked.edge), linked
    if cmd == "update":
        out = RecordUpdated.model_validate(
            await memory.call("records.update", id=args.id, **wire(fill(RecordChanges, args)))
        )
        return render.render_updated(out), out
    if cmd == "graph":
        graph = RecordGraph.model_validate(await memory.call("records.graph", id=args.id))
        return render.render_graph(graph), graph
    raise KiokuError(f"unknown records command {cmd!r}")
