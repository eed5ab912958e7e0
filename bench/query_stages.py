"""Where a new query's time goes in kioku, stage by stage, on real memories and questions.

Loads N memories (``peers.py --memories``' texts, every one with the model's own vector
and latent terms), then:

1. in the owner's process (``open_app``, no transport): each question once, as a new
   query through ``NoteService.search`` (what ``search_memory`` calls), with a timer
   around each stage of the path (query words, the embedding and its parts on the query
   lane, the index calls, fusion, payloads, folding, the activity log, the reply's text
   and structured content); p50 / mean per stage. Stages overlap (the lexical channel
   and the recent read run while the query is embedded), so they do not add up to the
   whole; "lane hop" is the wait for the query lane beyond the engine's own call.
2. over stdio (``kioku serve`` on the same data dir, raw JSON-RPC lines, no client
   library): the same questions as new queries, a search over the cached embedding
   (``top`` 4), a trivial call (``get_note`` of a missing id) and a ping.

``--src`` runs the in-process part with other checkouts' code too (each in its own
process, one after the other, on copies of the same data dir), so stages compare.
``--variant LABEL KIOKU_X=V ...`` runs this code (``SRC=DIR``: another checkout's)
with those settings too, on a copy whose index ``kioku reindex`` rebuilt with them (a
variant's ``embedder.channels``), so channels off and the opt-in pair compare stage by
stage.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/query_stages.py \
        [--n 2000] [--memories both] [--questions long] [--queries 120] [--src DIR ...] \
        [--variant pair 'KIOKU_EMBEDDER__CHANNELS=["static_use","minilm"]']
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import asyncio
import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from peers import _kioku_env, load_kioku_dir, memory_texts, question_texts

ROOT = _HERE.parent
Stages = dict[str, float]
_current: Stages = {}
_ends: dict[str, float] = {}  # when each stage last ended (perf_counter)


def _add(stage: str, began: float) -> None:
    _ends[stage] = time.perf_counter()
    _current[stage] = _current.get(stage, 0.0) + 1000 * (_ends[stage] - began)


def _timed_async(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            _add(stage, began)

    return wrapper


def _timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(stage, began)

    return wrapper


def _wrap(owner: Any, name: str, stage: str) -> None:
    """Time ``owner.name`` as ``stage`` (left alone where the code has no such thing)."""
    fn = getattr(owner, name, None)
    if fn is None:
        return
    timed = _timed_async if asyncio.iscoroutinefunction(fn) else _timed
    setattr(owner, name, timed(stage, fn))


def instrument(app: Any, notes: Any) -> None:
    from mcp_gateway.embedders import e5_onnx
    from mcp_gateway.search import service

    svc = app.search
    _wrap(notes, "search", "whole (NoteService.search)")
    _wrap(notes, "_log_search", "activity log entry")
    _wrap(svc, "search", "SearchService.search")
    if svc.writes is not None:
        _wrap(svc.writes, "caught_up", "write-behind caught up")
    _wrap(svc.thresholds, "get", "thresholds")
    _wrap(svc.memo, "sparse", "query words (BM25 terms)")
    _wrap(svc.vectors, "embed", "embedding, awaited")
    _wrap(svc.vectors, "_views", "dense views (calibration)")
    _wrap(svc.vectors, "channel_queries", "further channels' vectors")
    _wrap(svc.vectors.embedder, "encode_query", "encode_query, awaited")
    _wrap(svc, "_index_call", "index: the semantic call")
    _wrap(svc.recent, "read", "recent lessons read")
    if svc.fresh is not None:
        _wrap(svc.fresh, "hits", "fresh notes' hits")
    search_channels = svc.index.search_channels

    async def channels(dense: Any, sparse: Any, flt: Any, limit: int, **kw: Any) -> Any:
        began = time.perf_counter()
        try:
            return await search_channels(dense, sparse, flt, limit, **kw)
        finally:
            semantic = dense is not None or kw.get("latent") is not None
            _add("index: search_channels" if semantic else "index: lexical / exact", began)

    svc.index.search_channels = channels
    for name, stage in (
        ("fuse", "fuse"),
        ("pin_exact", "pin exact"),
        ("select", "select"),
        ("recent_floor", "recent floor"),
        ("identifier_terms", "query identifiers"),
    ):
        _wrap(service, name, stage)
    _wrap(service, "fold_results", "fold near-duplicates")
    materialise = svc.materialise
    svc.materialise = _timed_async("materialise (payloads)", materialise.__call__)
    onnx = e5_onnx.OnnxE5
    for name, stage in (
        ("encode", "engine: encode"),
        ("_windows", "engine: tokenise"),
        ("_feed", "engine: input embeddings"),
        ("_hidden", "engine: encoder graph"),
        ("_terms", "engine: latent terms"),
    ):
        _wrap(onnx, name, stage)
    _wrap(e5_onnx, "_mean_pool", "engine: mean pool")
    from mcp_gateway.embedders import minilm, static

    _wrap(minilm.MiniLM, "encode", "MiniLM engine: encode")
    _wrap(static.StaticEmbedder, "encode", "static_use engine: encode")
    for ce in svc.vectors.channels:
        _wrap(ce.embedder, "embed_query", f"channel {ce.channel.name}: embed_query, awaited")


async def profile_one(data: Path, questions: list[str]) -> list[Stages]:
    """In the owner's process with this process's code (PYTHONPATH): per question, the
    stages' ms."""
    from mcp_gateway.common.access import settings_scope
    from mcp_gateway.common.inputs import NoteQuery
    from mcp_gateway.common.render import render_search
    from mcp_gateway.common.settings import KiokuSettings
    from mcp_gateway.protocol.toolkit import result
    from mcp_gateway.services import Services
    from mcp_gateway.services.app import open_app

    settings = KiokuSettings(data_dir=data)
    async with open_app(settings, run_jobs=False) as app:
        notes = Services.over(app).notes
        scope = settings_scope(settings)
        for q in ("warm-up one", "warm-up two", "一つ目の準備"):
            await notes.search(scope, NoteQuery(query=q))
        instrument(app, notes)
        rows = []
        for q in questions:
            _current.clear()
            _ends.clear()
            began = time.perf_counter()
            response = await notes.search(scope, NoteQuery(query=q))
            channels, embedded = (
                _ends.get("further channels' vectors"),
                _ends.get("embedding, awaited"),
            )
            if channels is not None and embedded is not None:
                # what the index call waited for the channels once e5's vector was back
                _current["channels after e5 (the wait)"] = max(0.0, 1000 * (channels - embedded))
            t = time.perf_counter()
            reply = result(render_search(response), response)
            _add("reply: text + structured content", t)
            t = time.perf_counter()
            reply.model_dump_json(by_alias=True, exclude_none=True)
            _add("reply: JSON (the server's own dump)", t)
            _add("total in process", began)
            rows.append(dict(_current))
            await asyncio.sleep(0.03)  # as between an assistant's calls
    return rows


def table(by_src: dict[str, list[Stages]]) -> list[str]:
    names: list[str] = []
    for rows in by_src.values():
        for row in rows:
            names.extend(k for k in row if k not in names)
    head = " | ".join(f"{src} p50 / mean" for src in by_src)
    lines = [f"| stage (ms) | {head} |", "|---|" + "---|" * len(by_src)]
    for name in names:
        cells = []
        for rows in by_src.values():
            values = np.array([r.get(name, 0.0) for r in rows])
            cells.append(f"{np.median(values):.2f} / {values.mean():.2f}")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    for label, stage in (("lane hop", "encode_query, awaited"),):
        cells = []
        for rows in by_src.values():
            hop = np.array([r.get(stage, 0.0) - r.get("engine: encode", 0.0) for r in rows])
            cells.append(f"{np.median(hop):.2f} / {hop.mean():.2f}")
        lines.append(f"| {label} (awaited - engine) | {' | '.join(cells)} |")
    return lines


async def over_stdio(data: Path, src: Path, questions: list[str]) -> dict[str, list[float]]:
    if str(_HERE) not in sys.path:  # peers.py takes its folder off sys.path when imported
        sys.path.append(str(_HERE))
    from proxy_hop import stdio_side, stop_daemon

    argv = [sys.executable, "-m", "mcp_gateway.cli", "serve"]
    side = await stdio_side("kioku", argv, _kioku_env(src, data), src)
    out: dict[str, list[float]] = {"new query": [], "cached emb": [], "trivial": [], "ping": []}
    try:
        for q in ("warm-up one", "warm-up two"):
            await side.call("tools/call", {"name": "search_memory", "arguments": {"query": q}})
        for i, q in enumerate(questions):
            calls = {
                "new query": ("tools/call", {"name": "search_memory", "arguments": {"query": q}}),
                "cached emb": (
                    "tools/call",
                    {"name": "search_memory", "arguments": {"query": q, "top": 4}},
                ),
                "trivial": (
                    "tools/call",
                    {"name": "get_note", "arguments": {"id": f"01MISSING{i:017d}"}},
                ),
                "ping": ("ping", {}),
            }
            for kind, (method, params) in calls.items():
                out[kind].append(await side.timed(method, params))
                await asyncio.sleep(0.03)
    finally:
        side.writer.close()
        stop_daemon(data)
        await asyncio.sleep(1.0)
    return out


def main(args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.n:,} {args.memories} memories")
    texts = memory_texts(args.memories, args.n)
    questions = question_texts(args.questions, seed=3)[: args.queries]
    srcs = {"this": ROOT} | {f"src{i}": Path(s).resolve() for i, s in enumerate(args.src)}
    runs = [(name, src, "") for name, src in srcs.items()]
    runs += [(f"this, switch {s}", ROOT, s) for s in args.switch_interval]
    variants = {v[0]: dict(kv.split("=", 1) for kv in v[1:]) for v in args.variant}
    runs += [(label, Path(env.pop("SRC", ROOT)).resolve(), "") for label, env in variants.items()]
    with tempfile.TemporaryDirectory(prefix="kioku-stages-", ignore_cleanup_errors=True) as tmp:
        data = Path(tmp) / "kioku"
        began = time.perf_counter()
        load_kioku_dir(ROOT, data, texts, len(texts))
        print(f"loaded in {time.perf_counter() - began:.0f} s; {len(questions)} questions")
        by_src: dict[str, list[Stages]] = {name: [] for name, _, _ in runs}
        for i in range(len(runs)):
            shutil.copytree(data, Path(tmp) / f"data-{i}")
            name, src, _ = runs[i]
            if name in variants:  # its channels built into the copy's index
                env = _kioku_env(src, Path(tmp) / f"data-{i}") | variants[name]
                reindex = [sys.executable, "-m", "mcp_gateway.cli", "reindex"]
                subprocess.run(reindex, env=env, cwd=src, check=True, stdout=subprocess.DEVNULL)
        # in rounds, each run a share of the questions, the order rotating: the load
        # moves between runs on this machine, so each run sees its share of it
        share = -(-len(questions) // args.rounds)
        for r in range(args.rounds):
            for i in [(r + j) % len(runs) for j in range(len(runs))]:
                name, src, switch = runs[i]
                copy, out = Path(tmp) / f"data-{i}", Path(tmp) / f"{i}.jsonl"
                env = _kioku_env(src, copy) | {"KIOKU_LOG_LEVEL": "WARNING"}
                env |= variants.get(name, {})
                env |= {"STAGES_SWITCH_INTERVAL": switch} if switch else {}
                subprocess.run(
                    [sys.executable, __file__, "--profile-one", str(copy), str(out),
                     args.questions, str(r * share), str(share)],
                    env=env,
                    cwd=src,
                    check=True,
                )  # fmt: skip
                by_src[name] += [json.loads(line) for line in out.read_text().splitlines()]
        print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())} after the in-process part")
        print("\n".join(table(by_src)))
        if args.stdio:
            stdio = asyncio.run(over_stdio(data, ROOT, questions))
            print("over stdio (this code, raw JSON-RPC, 30 ms between calls; ms):")
            for kind, ms in stdio.items():
                v = np.array(ms)
                print(
                    f"  {kind:12s} p50 {np.median(v):6.2f} p95 {np.percentile(v, 95):6.2f} "
                    f"mean {v.mean():6.2f}"
                )
        print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--profile-one":
        _, _, data_dir, out_path, kind, start, count = sys.argv
        qs = question_texts(kind, seed=3)[int(start) : int(start) + int(count)]
        if os.environ.get("STAGES_SWITCH_INTERVAL"):  # an experiment: the GIL's hand-over
            sys.setswitchinterval(float(os.environ["STAGES_SWITCH_INTERVAL"]))
        found = asyncio.run(profile_one(Path(data_dir), qs))
        Path(out_path).write_text("\n".join(json.dumps(r) for r in found))
        raise SystemExit(0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--memories", choices=["real", "both", "template"], default="both")
    ap.add_argument("--questions", choices=["real", "both", "long"], default="long")
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=3, help="shares of the questions per run")
    ap.add_argument("--src", nargs="*", default=[], help="other checkouts to profile too")
    ap.add_argument("--no-stdio", dest="stdio", action="store_false")
    ap.add_argument(
        "--variant",
        nargs="+",
        action="append",
        default=[],
        metavar="LABEL KIOKU_X=V",
        help="also profile this code with these settings (its index rebuilt with them)",
    )
    ap.add_argument(
        "--switch-interval",
        nargs="*",
        default=[],
        help="also profile this code with sys.setswitchinterval(S) (default 0.005)",
    )
    main(ap.parse_args())
