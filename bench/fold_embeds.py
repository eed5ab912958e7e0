"""Who embeds during a paced in-process burst, counted: the embedding job (draft and
exact passes), the session context's near-duplicate fold, the owner's prefetch, other.
Texts handed to the embedder until the burst is settled (no draft left, the jobs
drained). For the fold's vectors: thrown away (before) or stored for the job (now).

    PYTHONPATH=DIR python bench/fold_embeds.py [--burst 300] [--rate 120]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import asyncio
import json
import random
import tempfile
import time
import traceback
from collections import Counter
from typing import Any

import mcp_gateway
from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import open_app
from mcp_gateway.services.notes import NoteService

NOTE_TYPES = {"note", "lesson", "conclusion", "knowledge", "profile", "checkpoint"}


def notes(n: int) -> list[tuple[str, str]]:
    """(text, type) of the quality sets' notes, shuffled; a record's type as a note's
    where it is one, else ``note``."""
    out: list[tuple[str, str]] = []
    for name in ("data", "conv"):
        with open(_HERE / "quality" / name / "memories.jsonl", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        out += [(r["text"], r["type"] if r["type"] in NOTE_TYPES else "note") for r in rows]
    random.Random(7).shuffle(out)
    return out[:n]


def caller() -> str:
    files = [f.filename for f in traceback.extract_stack()]
    for part, name in (
        ("neardup.py", "fold"),
        ("session_context.py", "fold"),
        ("prefetch.py", "prefetch"),
        ("fresh.py", "search"),
        ("embedding.py", "job"),
    ):
        if any(f.endswith(part) for f in files):
            return name
    return "other"


async def main(args: argparse.Namespace) -> None:
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        settings = KiokuSettings(data_dir=Path(tmp), redis_url=None)
        async with open_app(settings) as app:
            emb: Any = app.embedder
            encode, embed = emb.encode_documents, emb.embed_documents

            async def counted_encode(docs: Any, *a: Any, **kw: Any) -> Any:
                kind = "draft" if kw.get("draft") else "exact"
                counts[f"{caller()} {kind}"] += len(docs)
                return await encode(docs, *a, **kw)

            async def counted_embed(docs: Any, *a: Any, **kw: Any) -> Any:
                counts[f"{caller()} exact"] += len(docs)
                return await embed(docs, *a, **kw)

            emb.encode_documents, emb.embed_documents = counted_encode, counted_embed
            service = NoteService(app)
            began = time.perf_counter()
            for i, (text, kind) in enumerate(notes(args.burst)):
                await service.store(NoteFields(text=text, type=kind), app.namespaces[0])
                await asyncio.sleep(max(0.0, began + (i + 1) / args.rate - time.perf_counter()))
            await app.jobs.drain()
            while await app.vectors.drafts(app.embedder.model_id, limit=1):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            await app.jobs.drain()
            settled = time.perf_counter() - began
    print(f"{mcp_gateway.__file__}: {args.burst} notes at {args.rate}/s, settled {settled:.0f} s")
    for key, n in sorted(counts.items()):
        print(f"  {key:<16} {n:>6}")
    print(f"  {'total':<16} {sum(counts.values()):>6}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst", type=int, default=300)
    ap.add_argument("--rate", type=float, default=120.0)
    asyncio.run(main(ap.parse_args()))
