"""The owner's resident memory as notes grow: at open, after each batch of notes is
added and embedded, and after searches.

    python bench/footprint.py [--notes 2000] [--step 1000] [--searches 300]
        [--channels static_use,minilm]

Runs the owner's stores, index, embedder and job runner in this process (``open_app``,
as the daemon does) on a fresh data dir, adds notes written from the quality set's
memories (each repeated with a varying suffix, so no two texts are equal), waits until
every one is embedded and indexed, then runs searches. Prints RssAnon (the process's
own memory) and RssFile (mapped files: the model, the index's segments; shared and
reclaimable), and the growth per 1,000 notes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/ first: one of its names could shadow a package's
sys.path.append(str(ROOT / "bench"))  # the bench helpers, after every installed package

from harness import local  # noqa: E402
from owner_memory import DATA, texts  # noqa: E402  (the same notes through the doors)

from mcp_gateway.common.access import Scope, settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteFields, NoteQuery  # noqa: E402
from mcp_gateway.common.sections import EmbedderSettings  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import AppContext  # noqa: E402


def rss() -> dict[str, int]:
    """RssAnon and RssFile of this process, in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("RssAnon", "RssFile"):
            out[key] = int(line.split()[1]) // 1024
    return out


async def main(args: argparse.Namespace) -> None:
    embedder = KiokuSettings().embedder  # the configured one, its channels replaced if asked
    if args.channels:
        embedder = embedder.model_copy(update={"channels": args.channels})
    print(f"channels: {list(embedder.channels)}", flush=True)
    await measure(args, embedder)


async def add_in_steps(
    app: AppContext, services: Services, scope: Scope, notes: int, step: int
) -> AsyncIterator[tuple[int, float]]:
    """Add ``notes`` notes (``owner_memory.texts``) in steps of ``step``, each step's
    jobs drained and its points applied, so every note so far is embedded and indexed;
    yields the notes added so far and the seconds the step took."""
    todo = texts(notes)
    for start in range(0, len(todo), step):
        began = time.perf_counter()
        for text, kind in todo[start : start + step]:
            await services.notes.add(scope, NoteFields(text=text, type=kind))
        await app.jobs.drain()
        await app.applier.apply_pending()
        yield start + len(todo[start : start + step]), time.perf_counter() - began


async def measure(args: argparse.Namespace, embedder: EmbedderSettings) -> None:
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    async with local(embedder=embedder) as app:  # a temporary data dir: up to ~250 MB
        services, scope = Services.over(app), settings_scope(app.settings)
        opened = rss()
        print(f"open: {opened}", flush=True)
        rows = []
        async for done, took in add_in_steps(app, services, scope, args.notes, args.step):
            rows.append((done, rss(), took))
            print(f"{done} notes embedded: {rows[-1][1]} ({took:.0f} s)", flush=True)
        for q in queries[: args.searches]:
            await services.notes.search(scope, NoteQuery(query=q))
        searched = rss()
        print(f"after {args.searches} searches: {searched}", flush=True)
    last_n, last = rows[-1][0], rows[-1][1]
    per_k = (last["RssAnon"] - opened["RssAnon"]) / (last_n / 1000)
    print(f"RssAnon growth per 1,000 notes: {per_k:.1f} MB (open -> {last_n} notes)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--step", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument(
        "--channels",
        type=lambda v: [c for c in v.split(",") if c],
        default=None,
        help="embedder.channels, comma-separated (default: the configured ones)",
    )
    asyncio.run(main(parser.parse_args()))
