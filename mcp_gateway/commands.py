"""One-shot CLI commands. Each opens the app, does one thing, closes it.

They use ``run_jobs=False``: follow-up work (embedding, export) runs inline before the
command exits, so a CLI ``add`` is fully indexed when it returns.
"""

from __future__ import annotations

import argparse
import sys
import time

from .access import settings_scope
from .app import open_app
from .cli_records import run_records_command
from .render import render_search
from .search import SearchRequest
from .settings import KiokuSettings
from .tools_notes import note_fields, store_note
from .validation import bounded_int


async def add(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with open_app(settings, run_jobs=False) as app:
        fields = note_fields(
            app,
            text=args.text,
            type=args.type,
            priority=args.priority,
            domain=args.domain,
            solved_query=args.solved_query,
        )
        note = await store_note(app, fields, settings.namespace)
        print(note.id)
    return 0


async def search(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with open_app(settings, run_jobs=False) as app:
        response = await app.search.search(
            SearchRequest(
                query=args.query,
                type=args.type,
                domain=args.domain,
                top=bounded_int(args.top, "top", 1, settings.search.max_top),
                namespaces=settings_scope(settings).read,
            )
        )
        print(response.model_dump_json(indent=2) if args.json else render_search(response))
    return 0


async def stats(args: argparse.Namespace, settings: KiokuSettings) -> int:
    from .cli import print_json

    async with open_app(settings, run_jobs=False) as app:
        print_json(
            {
                "data_dir": str(settings.data_dir),
                "embedder": app.embedder.model_id,
                "index": type(app.index).__name__,
                "index_points": await app.index.count(),
                "notes": await app.notes.counts(),
                "records": await app.records.counts(),
                "jobs": await _queue_stats(settings),
            }
        )
    return 0


async def _queue_stats(settings: KiokuSettings) -> dict[str, object]:
    from workers.main import queue_stats

    return await queue_stats(settings)


def _progress(done: int, total: int, started: float) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    rate = done / max(time.monotonic() - started, 1e-6)
    bar = "#" * filled + "-" * (width - filled)
    print(f"\r[{bar}] {done}/{total} {rate:.0f}/s", end="", file=sys.stderr, flush=True)


async def reindex(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Drop the index and rebuild it from SQLite for the configured embedder."""
    async with open_app(settings, run_jobs=False, adopt_model=True) as app:
        await app.index.clear()
        total = (await app.notes.counts())["total"]
        started, done, after = time.monotonic(), 0, ""
        while page := await app.notes.page(after, limit=settings.embedder.batch_size * 4):
            await app.indexer.embed_notes(page)
            done, after = done + len(page), page[-1].id
            _progress(done, total, started)
        print(file=sys.stderr)
        from workers.jobs import index_all_records

        records = await index_all_records({"app": app})
        print(f"reindexed {done} notes and {records} records")
    return 0


async def doctor(args: argparse.Namespace, settings: KiokuSettings) -> int:
    ok = True
    print(f"data dir   {settings.data_dir}")
    try:
        async with open_app(settings, run_jobs=False) as app:
            vec = await app.embedder.embed_query("doctor probe")
            print(f"embedder   ok  {app.embedder.model_id} dim={len(vec)}")
            print(f"index      ok  {type(app.index).__name__} points={await app.index.count()}")
            counts = await app.notes.counts()
            print(f"sqlite     ok  notes={counts['total']} pending={counts['pending_embedding']}")
    except Exception as exc:
        ok = False
        print(f"FAILED     {exc}")
    if settings.redis_url:
        from workers.main import check_redis

        redis_ok, detail = await check_redis(settings)
        ok = ok and redis_ok
        print(f"redis      {'ok ' if redis_ok else 'FAILED'} {detail}")
    return 0 if ok else 1


async def export_now(args: argparse.Namespace, settings: KiokuSettings) -> int:
    from workers.jobs import export_session_context

    async with open_app(settings, run_jobs=False) as app:
        await export_session_context({"app": app})
        print(settings.session_context_path)
    return 0


async def records(args: argparse.Namespace, settings: KiokuSettings) -> int:
    async with open_app(settings, run_jobs=False) as app:
        started = time.time()
        code = await run_records_command(args, app.records)
        changed = await app.records.changed_since(started - 1)
        if changed:
            await app.jobs.records_changed([r.id for r in changed])
        return code
