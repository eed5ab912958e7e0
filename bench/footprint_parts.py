"""Where the in-process owner's anonymous memory is: at open and after notes.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/footprint_parts.py \
        [--notes 2000] [--step 1000] [--searches 0] [--trace] [--close-index] \
        [--rebuild] [--exact-below N]

Opens the owner as ``bench/footprint.py`` does and prints, at open and after each step
of notes is embedded: RssAnon / RssFile; anonymous resident MB per mapping (glibc's
main heap ``[heap]``, unnamed mappings: the other malloc arenas, Python's object arenas,
thread stacks, the engine's allocations); glibc's ``mallinfo2`` (bytes in use / free
in its arenas, bytes in mmapped chunks: buffers over the 256 KB threshold, the
onnxruntime sessions' weights); with ``--trace``, what Python itself holds
(tracemalloc, by file, growth since open). Then, after the searches, a
``malloc_trim``; ``--close-index``: the index closed alone (what the engine held is
what its heap gives back), then the app. ``--rebuild``: a rebuild after the notes
(``services.rebuild``; out of process, an optimised shard, at or above
``--exact-below`` points, which sets ``index.exact_search_below``).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)
sys.path.append(str(ROOT / "bench"))

from footprint import add_in_steps, rss  # noqa: E402
from owner_memory import DATA  # noqa: E402

from mcp_gateway.common import heap  # noqa: E402
from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import NoteQuery  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def mallinfo() -> dict[str, int]:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _Mallinfo2
    m = libc.mallinfo2()
    mb = 1 << 20
    return {
        "arenas": m.arena // mb,
        "in_use": m.uordblks // mb,
        "free": m.fordblks // mb,
        "mmapped": m.hblkhd // mb,
    }


def anon_maps() -> dict[str, float]:
    """Anonymous resident MB by mapping: [heap], [stack], unnamed by size class."""
    out: dict[str, float] = {}
    name = ""
    size = 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            size = hi - lo
            path = head[5] if len(head) > 5 else ""
            if path.startswith("["):
                name = path
            elif path:
                name = "file-backed (private dirty)"
            elif size >= 60 << 20:
                name = "unnamed >=60MB (glibc thread arenas)"
            elif size >= 1 << 20:
                name = "unnamed 1-60MB"
            else:
                name = "unnamed <1MB"
        elif line.startswith("Anonymous:"):
            out[name] = out.get(name, 0) + int(line.split()[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.5}


def report(label: str, base: tracemalloc.Snapshot | None) -> None:
    gc.collect()
    print(f"== {label}: {rss()} malloc {mallinfo()}", flush=True)
    print(f"   anon maps: {anon_maps()}", flush=True)
    if tracemalloc.is_tracing():
        traced, _ = tracemalloc.get_traced_memory()
        print(f"   python traced: {traced / 2**20:.1f} MB", flush=True)
        if base is not None:
            snap = tracemalloc.take_snapshot()
            for stat in snap.compare_to(base, "filename")[:15]:
                print(f"     {stat.size_diff / 2**20:+7.2f} MB {stat.traceback}", flush=True)


async def main(args: argparse.Namespace) -> None:
    queries = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").open()]
    with tempfile.TemporaryDirectory(prefix="kioku-parts-") as tmp:
        settings = KiokuSettings(data_dir=Path(tmp) / "data")
        if args.exact_below is not None:
            index = settings.index.model_copy(update={"exact_search_below": args.exact_below})
            settings = settings.model_copy(update={"index": index})
        if args.trace:
            tracemalloc.start(1)
        async with open_app(settings) as app:
            services, scope = Services.over(app), settings_scope(settings)
            base = tracemalloc.take_snapshot() if args.trace else None
            if args.trace:
                snap = base
                assert snap is not None
                print("   python at open by file:", flush=True)
                for stat in snap.statistics("filename")[:15]:
                    print(f"     {stat.size / 2**20:7.2f} MB {stat.traceback}", flush=True)
            report("open", None)
            async for done, took in add_in_steps(app, services, scope, args.notes, args.step):
                report(f"{done} notes ({took:.0f} s)", base)
            if args.rebuild:  # a rebuild (out of process above exact_search_below), swapped in
                began = time.perf_counter()
                status = await services.rebuild.rebuild()
                await app.settle()
                heap.trim()
                report(f"rebuilt ({status.state}, {time.perf_counter() - began:.0f} s)", base)
            for q in queries[: args.searches]:
                await services.notes.search(scope, NoteQuery(query=q))
            if args.searches:
                report(f"after {args.searches} searches", base)
            heap.trim()
            report("after malloc_trim", base)
            if args.close_index:
                await app.index.close()
                heap.trim()
                report("index closed, trimmed", base)
        heap.trim()
        report("app closed, trimmed", base)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--step", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=0)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the index after the notes")
    parser.add_argument("--exact-below", type=int, default=None, help="index.exact_search_below")
    parser.add_argument("--close-index", action="store_true", help="then close the index alone")
    asyncio.run(main(parser.parse_args()))
