"""A bulk import, in the owner's process: ``kioku import``'s service call, then the
embedding until settled.

``--notes N`` real memories (``bench/ingest.py``'s ``real_texts``: the quality sets'
memories, numbered copies past them) go through ``TransferService.import_items`` as a
kioku export's notes, with the in-process job runner and the configured embedder (set
``KIOKU_EMBEDDER__*`` to compare). Prints the import call's time; when every note was
searchable by meaning (its static vector pooled or its e5 vector stored, with
``search.fast_first``); when every note had an e5 vector; when no draft was left
(settled), and notes/s per document lane. ``uptime``'s load is printed at start and
end: read the figures beside it.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/import_bulk.py [--notes 10000]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import os
import tempfile
import time

import anyio
from ingest import real_texts
from ulid import ULID

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services import Services
from mcp_gateway.services.app import open_app


async def main(args: argparse.Namespace) -> None:
    texts = real_texts(args.notes)
    items = [{"kind": "note", "id": str(ULID()), "text": t, "type": "note"} for t in texts]
    with tempfile.TemporaryDirectory() as tmp:
        settings = KiokuSettings(data_dir=Path(tmp), redis_url=None)
        emb = settings.embedder
        print(
            f"load {os.getloadavg()[0]:.1f}; {args.notes} notes; document lanes "
            f"{emb.document_lanes} x {emb.document_threads} thread(s), nice "
            f"+{emb.document_nice}, draft_backlog {emb.draft_backlog}",
            flush=True,
        )
        async with open_app(settings) as app:
            model = app.embedder.model_id
            began = time.perf_counter()
            report = await Services.over(app).transfer.import_items(items)
            imported_s = time.perf_counter() - began
            print(f"import call {imported_s:.1f} s: {report}", flush=True)
            pool = app.index.fast_pool
            searchable_s = settled_s = pooled_s = None
            last_print = 0.0
            while settled_s is None:
                await anyio.sleep(0.5)
                got = await app.vectors.backlog_figures(model, 0.0)
                now = time.perf_counter() - began
                if (
                    pooled_s is None
                    and pool is not None
                    and len(pool) + got["stored"] >= args.notes
                ):
                    pooled_s = now  # each note by its static vector or its e5 one
                    print(f"every note searchable by meaning {now:.1f} s after", flush=True)
                if searchable_s is None and got["stored"] >= args.notes:
                    searchable_s = now
                if searchable_s is not None and got["drafts"] == 0:
                    settled_s = now
                if now - last_print >= 15:
                    last_print = now
                    print(
                        f"  {now:6.1f} s: {got['stored']} with a vector, {got['drafts']} "
                        f"drafts; load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                if now > args.limit:
                    print("limit reached: not settled")
                    break
            lanes = emb.document_lanes * emb.document_threads
            if searchable_s is not None:
                print(f"every note had an e5 vector {searchable_s:.1f} s after the import began")
            if settled_s is not None:
                rate = args.notes / settled_s
                print(
                    f"settled {settled_s:.1f} s after ({rate:.1f} notes/s, "
                    f"{rate / lanes:.1f} a second per core on the one channel); "
                    f"load {os.getloadavg()[0]:.1f}"
                )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--limit", type=float, default=900.0, help="stop waiting after (s)")
    anyio.run(main, ap.parse_args())
