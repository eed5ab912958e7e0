"""CLI commands. Each goes through the data dir's owner when one runs (its admin API)
or owns the stores itself for the command's duration (``client.connect``): a
``kioku add`` beside a running server is seen by that server at once, and vice versa.
Human output goes to stdout, logs and progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import anyio

from mcp_gateway.cli.client import RemoteMemory, connect, owner_answers, owner_client
from mcp_gateway.cli.progress import backlog_lines, follow, searchable_lines
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.inputs import NoteChanges, NoteFields, NoteQuery, fill, wire
from mcp_gateway.common.render import render_note, render_search
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import RebuildStatus, SearchResponse
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.owner_state import read_owner
from mcp_gateway.protocol.http_token import read_token, token_path


def print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2, default=str))


async def add(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with connect(settings) as memory:
        out = await memory.call("notes.add", **wire(fill(NoteFields, args)))
    print(out["id"])
    if out.get("status") == "already_stored":
        print(f"kioku: already stored as {out['id']}: not stored twice", file=sys.stderr)
    return 0


async def search(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with connect(settings) as memory:
        out = await memory.call("notes.search", **wire(fill(NoteQuery, args)))
    print(
        json.dumps(out, ensure_ascii=False, indent=2)
        if args.json
        else render_search(SearchResponse.model_validate(out))
    )
    return 0


async def list_notes(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with connect(settings, models=False) as memory:
        out = await memory.call("notes.list", type=args.type, limit=args.limit, after=args.after)
    if args.json:
        print_json(out)
        return 0
    for note in out["notes"]:
        flag = " high" if note["priority"] == "high" else ""
        first = " ".join(note["text"].split())[:90]
        print(f"{note['id']}  {note['created_at'][:10]}  {note['type']}{flag}  {first}")
    if out["next_after"]:
        print(f"(more: --after {out['next_after']})", file=sys.stderr)
    return 0


async def show(args: argparse.Namespace, settings: KiokuSettings) -> int:
    from mcp_gateway.services.notes import NoteView  # the service layer: only where it is needed

    async with connect(settings, models=False) as memory:
        out = await memory.call("notes.get", note_id=args.id)
    print_json(out) if args.json else print(render_note(NoteView.model_validate(out).model_dump()))
    return 0


async def edit(args: argparse.Namespace, settings: KiokuSettings) -> int:
    changes = fill(NoteChanges, args).given()
    if not changes:
        raise InvalidInput("nothing to change: give --text, --type, --priority, --domain ...")
    async with connect(settings) as memory:
        out = await memory.call("notes.update", note_id=args.id, **changes)
    print(f"updated {', '.join(out['changed'])}" if out["changed"] else "nothing changed")
    return 0


async def delete(args: argparse.Namespace, settings: KiokuSettings) -> int:
    restore = args.command == "restore"
    async with connect(settings) as memory:
        out = await memory.call("notes.delete", note_id=args.id, restore=restore)
    print(f"{'restored' if restore else 'deleted (kioku restore ID brings it back)'} {out['id']}")
    return 0


async def stats(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with connect(settings, models=False) as memory:
        out = await memory.call("stats")
    if args.json:
        print_json(out)
        return 0
    for section, value in out.items():
        if section == "backlog":  # a list: one line per embedding model, as status shows it
            print("backlog:")
            for line in backlog_lines(value) or ["(none)"]:
                print(f"  {line}")
            continue
        if section == "searchable_after_ack":
            print("searchable after ack:")
            for line in searchable_lines(value) or ["(no note acknowledged yet)"]:
                print(f"  {line}")
            continue
        if not isinstance(value, dict):
            print(f"{section.replace('_', ' '):<28} {value}")
            continue
        print(f"{section}:")
        for key, item in value.items() or [("(none)", "")]:
            print(f"  {key.replace('_', ' '):<26} {_stat(item)}")
    return 0


def _stat(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_stat(v)}" for k, v in value.items()) or "-"
    return "-" if value == "" else str(value)


async def status(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Who owns the data dir, and the stores side by side; never starts anything."""
    paths = gw.GatewayPaths.for_settings(settings)
    # an owner still starting holds the lock but answers once its stores are open
    if read_owner(paths) is None or not await owner_answers(settings):
        if args.json:
            print_json({"owner": None})
        else:
            print(f"no kioku process owns {settings.data_dir} (it starts with `kioku serve`)")
        return 0
    async with owner_client(settings) as client:
        data = await RemoteMemory(client).status()
    if args.json:
        print_json(data)
        return 0
    o, index, notes = data["owner"], data["index"], data["notes"]
    print(f"owner      pid {o['pid']} ({o['kind']}) since {_ago(o['started_at'])}")
    token = read_token(settings.data_dir) if o["kind"] == "http" else None
    if o["http_url"] and token and not settings.http.token and not settings.http.grants:
        print(f"http       {o['http_url']}  bearer token {token} ({token_path(settings.data_dir)})")
    print(f"requests   {o['requests']} served, {o['in_flight']} in flight, idle {o['idle_s']} s")
    print(f"editors    {o.get('sessions', 0)} attached (stdio sessions)")
    print(f"notes      {notes['total']} live, {notes['pending_embedding']} pending embedding")
    for i, line in enumerate(backlog_lines(data.get("backlog") or [])):
        print(f"{'backlog' if i == 0 else '':10s} {line}")
    for line in searchable_lines(data.get("searchable_after_ack") or {}):
        print(f"{'':10s} {line}")
    print(
        f"index      {index['points']} points / {index['expected_points']} expected "
        f"({index['collection']}, {index['model']}; "
        f"HNSW graph over {index.get('graph_points', 0)})"
    )
    storage, wanted = index.get("dense_storage"), index.get("configured_dense_storage")
    if storage and wanted and storage != wanted:
        print(f"           dense vectors stored as {storage}: `kioku reindex` makes them {wanted}")
    rebuild = data.get("rebuild") or {}
    if rebuild.get("state") == "running":
        where = f"build process {rebuild['build_pid']}" if rebuild.get("out_of_process") else ""
        print(f"rebuild    {rebuild['collection']} running {rebuild['seconds']} s {where}")
    jobs = data["jobs"]
    print(
        f"jobs       {jobs.get('runner')}: {jobs.get('queued', 0)} queued, "
        f"{jobs.get('in_progress', 0)} running, {jobs.get('failures', {}).get('count', 0)} failed"
    )
    return 0


def _ago(ts: float) -> str:
    minutes = int(time.time() - ts) // 60
    return f"{minutes // 60} h {minutes % 60} min ago" if minutes >= 60 else f"{minutes} min ago"


async def reindex(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Blue/green rebuild: the live index serves until the new one is complete."""
    async with connect(settings, configured_engine=True) as memory:
        if memory.remote:
            owner = await memory.status()
            if owner["embedder"] != _configured_model(settings):
                raise InvalidInput(
                    f"the running kioku (pid {owner['owner']['pid']}) uses {owner['embedder']}"
                    f" but this configuration says {_configured_model(settings)}: run "
                    "`kioku stop`, then `kioku reindex` again"
                )
        final = await memory.reindex(_progress)
    print(file=sys.stderr)
    if final.state != "done":
        print(f"kioku: reindex {final.state}: {final.message}", file=sys.stderr)
        return 1
    print(
        f"reindexed {final.notes_done} notes and {final.records_done} records into "
        f"{final.collection} ({final.model}) in {final.seconds:.1f} s; "
        f"{final.embedded} embedded"
    )
    return 0


def _configured_model(settings: KiokuSettings) -> str:
    from mcp_gateway.embedders import build_embedder

    return build_embedder(settings.embedder).model_id


def _progress(st: RebuildStatus) -> None:
    total = max(st.notes_total, 1)
    width = 30
    filled = min(width, int(width * st.notes_done / total))
    bar = "#" * filled + "-" * (width - filled)
    print(
        f"\r[{bar}] {st.notes_done}/{st.notes_total} notes, {st.records_done} records, "
        f"{st.embedded} embedded",
        end="",
        file=sys.stderr,
        flush=True,
    )


async def doctor(args: argparse.Namespace, settings: KiokuSettings) -> int:
    print(f"data dir   {settings.data_dir}")
    try:
        async with connect(settings, configured_engine=True) as memory:
            checks = await memory.call("doctor")
    except Exception as exc:
        print(f"FAILED     {exc}")
        return 1
    ok = True
    for check in checks:
        ok = ok and check["ok"]
        print(f"{check['name']:<10} {'ok ' if check['ok'] else 'FAILED'} {check['detail']}")
    if settings.redis_url:
        from mcp_gateway.queue.health import check_redis

        redis_ok, detail = await check_redis(settings)
        ok = ok and redis_ok
        print(f"redis      {'ok ' if redis_ok else 'FAILED'} {detail}")
    return 0 if ok else 1


async def context(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Regenerate session_context.md now."""
    async with connect(settings, models=False) as memory:
        print(await memory.call("export_context"))
    return 0


async def export(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """A backup: JSON lines (re-importable) or one Markdown document (for reading)."""
    from pathlib import Path

    from mcp_gateway.common.fsperms import write_atomic
    from mcp_gateway.services.transfer import render_markdown

    def target() -> Path | None:
        output = Path(args.output).expanduser() if args.output else None
        if output is not None and output.is_dir():
            # refused rather than guessed into: the backup lands where it was named
            raise InvalidInput(
                f"{output} is a folder: name the file to write, "
                f"e.g. {output / 'kioku-export.jsonl'}"
            )
        return output

    output = await anyio.to_thread.run_sync(target)
    async with connect(settings, models=False) as memory:
        items = await memory.call("transfer.export")
    if args.format == "markdown":
        text = render_markdown(items[1:])
    else:
        text = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    if output is not None:
        try:
            await anyio.to_thread.run_sync(lambda: write_atomic(output, text))
        except OSError as exc:
            raise InvalidInput(f"cannot write {output}: {exc.strerror}") from None
        print(
            f"exported {items[0]['notes']} notes and {items[0]['records']} records", file=sys.stderr
        )
    else:
        sys.stdout.write(text)
    return 0


async def import_(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Read and check the whole source here (line-numbered errors, nothing sent on a
    refusal), warn about what was skipped, then the owner checks again and writes."""
    from pathlib import Path

    from mcp_gateway.services.import_check import Limits, check_items
    from mcp_gateway.services.import_files import parse_file

    limits = Limits.of(settings)

    def read() -> list[Any]:
        parsed = parse_file(Path(args.source).expanduser(), limits)
        for warning in parsed.warnings:
            print(f"kioku: {warning}", file=sys.stderr)
        return check_items(parsed.items, limits)

    began = time.monotonic()
    items = await anyio.to_thread.run_sync(read)
    print(
        f"kioku: read and checked {len(items):,} items in {time.monotonic() - began:.1f} s; "
        "writing them",
        file=sys.stderr,
    )
    async with connect(settings) as memory:
        report = await memory.call("transfer.import", items=items)
        print(
            f"imported {counted(report['notes_added'], 'note')} "
            f"({report['notes_updated']} updated), "
            f"{counted(report['records_added'], 'record')}, "
            f"{counted(report['links_added'], 'link')}; "
            f"{report['skipped']} already present",
            flush=True,
        )
        added = report["notes_added"] + report["notes_updated"] + report["records_added"]
        if not added or args.no_wait:
            return 0
        if not memory.remote:
            print(
                f"kioku: {added:,} notes and records wait for a vector: the next `kioku serve` "
                "embeds them (`kioku status` shows the backlog; lexical search finds them now)",
                file=sys.stderr,
            )
            return 0
        await follow(memory, added)
    return 0


async def records(args: argparse.Namespace, settings: KiokuSettings) -> int:
    from mcp_gateway.cli.records import run_records_command

    async with connect(settings) as memory:
        return await run_records_command(args, memory)


def counted(n: int, noun: str) -> str:
    """``1 note``, ``2 notes``: a count as a reader says it."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
