"""Retrieval-quality benchmark: drives the real server over MCP (stdio).

1. Ingests each set's ``memories.jsonl`` oldest first into a fresh data dir (notes with
   ``add_note``'s server path, records with ``record_add`` and their links) and waits
   until every note and record has its dense vector, drafts embedded exactly.
2. For each search mode (the single-signal baselines ``lexical`` and ``dense``, and the
   shipped ``hybrid``), starts ``kioku serve`` over stdio on that data dir, sends every
   query of ``queries.jsonl`` through ``search_memory`` and scores the ranked ids.
3. Prints, per set and split, nDCG@10 and recall@1/5/10 overall, per query kind and per
   language, each with a 95 % bootstrap interval (``intervals.py``), plus search latency
   p50/p95 (client round trip over stdio, and server side from the activity log).
4. With ``--compare`` (settings) or ``--baseline`` (an earlier ``--out``), prints the
   paired difference per split and kind and lists the groups significantly worse.
   ``--previous`` (settings) runs the hybrid mode again as the previous release ranked
   (``make bench-quality``: channels off) and prints this tree's default beside it.

    python bench/quality/run.py                 # data/ (generated) and conv/ (conversations)
    python bench/quality/run.py --modes hybrid --compare search.rrf_k=20
    python bench/quality/run.py --modes hybrid --out main.json      # on main, then:
    python bench/quality/run.py --modes hybrid --baseline main.json # on a branch
    python bench/quality/run.py --data bench/quality/heldout   # the held-out set (test only)
    python bench/quality/run.py --modes hybrid --previous 'embedder.channels=[]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # the bench helpers, after every installed package

import intervals  # noqa: E402
from harness import add, local, serve_env, serve_params, settle  # noqa: E402
from metrics import percentile, score  # noqa: E402

from mcp_gateway.common.access import settings_scope  # noqa: E402
from mcp_gateway.common.inputs import RecordFields  # noqa: E402
from mcp_gateway.common.sections import EmbedderSettings  # noqa: E402
from mcp_gateway.embedders.channels import configured_channels  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402

KIOKU = str(Path(sys.executable).with_name("kioku"))
# printed with a bootstrap interval; R@k on the conversational set is evidence recall@k
TABLE_METRICS = ("nDCG@10", "R@1", "R@5", "R@10")
PAIRED_METRICS = ("nDCG@10", "R@5", "R@10")


def load_jsonl(name: str, folder: Path = HERE / "data") -> list[dict[str, Any]]:
    with (folder / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


async def ingest(data_dir: Path, memories: list[dict[str, Any]]) -> dict[str, str]:
    """Add every memory oldest first; return server id -> benchmark key."""
    ids: dict[str, str] = {}  # key -> server id
    ordered = sorted(memories, key=lambda m: (-float(m["age_days"]), m["key"]))
    async with local(data_dir) as app:
        ns = settings_scope(app.settings)
        services = Services.over(app)
        for mem in ordered:
            if mem["kind"] == "note":
                ids[mem["key"]] = await add(
                    app,
                    mem["text"],
                    ns.write,
                    type=mem["type"],
                    priority=mem.get("priority", ""),
                    domain=mem.get("domain", ""),
                )
            else:
                links = [link(spec, ids) for spec in mem.get("links", [])]
                record = RecordFields(
                    type=mem["type"], title=mem["title"], content=mem["text"], links=tuple(links)
                )
                added = await services.records.add(ns, record)
                ids[mem["key"]] = added.record.id
        # a bulk load is a backlog: drafted first (jobs/embedding.py), embedded exactly
        # once reconcile finds the drafts, as the owner's periodic pass does
        await settle(app, reconcile=True)
        counts = await app.notes.counts()
        assert counts["pending_embedding"] == 0, counts
    return {server_id: key for key, server_id in ids.items()}


def link(spec: str, ids: dict[str, str]) -> str:
    relation, target = spec.split(":", 1)
    return f"{relation}:{ids[target]}"


def server(data_dir: Path, overrides: dict[str, str]) -> StdioServerParameters:
    """``kioku serve --standalone`` on ``data_dir``, with only ``overrides`` for settings."""
    return serve_params(serve_env(data_dir, settings=overrides), standalone=True)


async def ensure_channels(data_dir: Path, overrides: dict[str, str]) -> None:
    """Build the dense channels ``overrides`` asks for that ``data_dir``'s index lacks.

    The ingest embeds with the default settings, and a server started with channels its
    index lacks searches without them (it only logs a warning), so a ``--set
    embedder.channels=...`` run would silently equal a run without. ``kioku reindex``
    adds them, keeping every channel the index already holds (a reindex drops the ones
    it is not given), with the run's embedder settings: a channel whose model they change
    (``embedder.minilm_int8``) is built again for that model."""
    embedder = {
        k: v for k, v in overrides.items() if k.startswith("KIOKU_EMBEDDER__")
    }  # a channel's model follows these
    fields = {k.removeprefix("KIOKU_EMBEDDER__").lower(): v for k, v in embedder.items()}
    wanted = configured_channels(EmbedderSettings.model_validate_json(_json_object(fields)))
    async with local(data_dir, run_jobs=False) as app:
        have = {c.name: c.model_id for c in app.index.spec.channels}
    missing = [c.name for c in wanted if have.get(c.name) != c.model_id]
    if not missing:
        return
    print(f"{data_dir.name}: building channels {missing} (kioku reindex)", file=sys.stderr)
    keep = [name for name in have if name not in missing]
    env = serve_env(
        data_dir, settings={**embedder, "KIOKU_EMBEDDER__CHANNELS": json.dumps(keep + missing)}
    )
    proc = await asyncio.create_subprocess_exec(KIOKU, "reindex", env=env, stdout=sys.stderr)
    if await proc.wait() != 0:
        raise SystemExit(f"{data_dir}: kioku reindex failed (exit {proc.returncode})")


async def ask(client: Client, q: dict[str, Any], top: int, keys: dict[str, str]) -> list[str]:
    """``q`` through ``search_memory``; the ranked ids as benchmark keys (``keys``)."""
    args: dict[str, Any] = {"query": q["query"], "top": top}
    for field in ("type", "domain"):
        if q.get(field):
            args[field] = q[field]
    res = await client.call_tool("search_memory", args)
    if res.is_error:
        raise RuntimeError(f"{q['qid']}: {res.content[0].text}")  # type: ignore[union-attr]
    return [keys.get(r["id"], r["id"]) for r in res.structured_content["results"]]


async def run_mode(
    data_dir: Path,
    mode: str,
    queries: list[dict[str, Any]],
    keys: dict[str, str],
    overrides: dict[str, str],
    top: int,
) -> dict[str, Any]:
    params = server(data_dir, {"KIOKU_SEARCH__MODE": mode, **overrides})
    per_query: list[dict[str, Any]] = []
    client_ms: list[float] = []
    log_path = data_dir / "logs" / "activity.jsonl"
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    async with Client(params) as client:
        for q in queries:
            started = time.perf_counter()
            ranked = await ask(client, q, top, keys)
            client_ms.append((time.perf_counter() - started) * 1000)
            per_query.append(
                {
                    "qid": q["qid"],
                    "kind": q["kind"],
                    "lang": q["lang"],
                    "split": q["split"],
                    **score(ranked, set(q["relevant"])),
                    "ranked": ranked,  # all `--top` of them (use_channel.py fuses deeper)
                }
            )
    server_ms = _server_latencies(log_path, log_offset)
    return {"mode": mode, "queries": per_query, "client_ms": client_ms, "server_ms": server_ms}


def _server_latencies(path: Path, offset: int) -> list[float]:
    with path.open(encoding="utf-8") as fh:
        fh.seek(offset)
        return [e["latency_ms"] for e in map(json.loads, fh) if e.get("event") == "search_memory"]


def print_latency(results: list[dict[str, Any]]) -> None:
    for res in results:
        c, s = res["client_ms"], res["server_ms"]
        print(
            f"latency {res['mode']:8s} stdio round trip p50 {percentile(c, 0.5):6.2f} "
            f"p95 {percentile(c, 0.95):6.2f} ms | server side p50 {percentile(s, 0.5):6.2f} "
            f"p95 {percentile(s, 0.95):6.2f} ms"
        )
    print()


def _json_object(fields: dict[str, str]) -> str:
    """Environment values (JSON where they parse, else strings) as one JSON object."""

    def value(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            return text

    return json.dumps({k: value(v) for k, v in fields.items()})


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        out["KIOKU_" + key.upper().replace(".", "__")] = value
    return out


async def run_set(
    folder: Path, data_dir: Path, modes: list[str], overrides: dict[str, str], top: int
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """Ingest ``folder`` into ``data_dir`` (once; reused when it holds the keys file), then
    run every mode; returns the memory count, the queries and one result per mode."""
    memories = load_jsonl("memories.jsonl", folder)
    queries = load_jsonl("queries.jsonl", folder)
    keys_file = data_dir / "bench-keys.json"
    if keys_file.exists():
        keys = json.loads(keys_file.read_text())
    else:
        started = time.perf_counter()
        keys = await ingest(data_dir, memories)
        keys_file.write_text(json.dumps(keys))
        print(
            f"{folder.name}: ingested {len(memories)} memories in "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    await ensure_channels(data_dir, overrides)
    results = [await run_mode(data_dir, mode, queries, keys, overrides, top) for mode in modes]
    return len(memories), queries, results


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--modes", nargs="+", default=["lexical", "dense", "hybrid"])
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="settings for every mode, e.g. search.rrf_k=20",
    )
    ap.add_argument(
        "--compare",
        nargs="*",
        metavar="SECTION.KEY=VALUE",
        help="a candidate: every mode runs again with these settings on top of --set, and the\n"
        "paired difference (candidate minus --set) is printed per split and kind",
    )
    ap.add_argument(
        "--previous",
        nargs="*",
        metavar="SECTION.KEY=VALUE",
        help="the previous release's settings (on top of --set): the hybrid mode runs again\n"
        "with them first, and this run minus that one is printed per split and kind",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        help="an earlier --out file (e.g. written on main): paired difference of this run\n"
        "minus that one, per set, mode, split and kind",
    )
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument(
        "--data-dir", type=Path, help="reuse ingested data dirs: one subfolder per --data set"
    )
    ap.add_argument("--out", type=Path, help="write per-query results as JSON (for --baseline)")
    ap.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[HERE / "data", HERE / "conv"],
        help="folders with memories.jsonl and queries.jsonl (default: the generated set and\n"
        "the conversational one, conv/; heldout/: never tuned on)",
    )
    ap.add_argument("--resamples", type=int, default=intervals.RESAMPLES)
    ap.add_argument("--seed", type=int, default=intervals.SEED)
    args = ap.parse_args()
    boot = {"resamples": args.resamples, "seed": args.seed}
    baseline = json.loads(args.baseline.read_text()) if args.baseline else {}
    overrides = parse_overrides(args.set)
    out: dict[str, Any] = {}
    worse: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in args.data:
            name = folder.name
            data_dir = (args.data_dir or Path(tmp)) / name
            data_dir.mkdir(parents=True, exist_ok=True)
            count, queries, results = await run_set(
                folder, data_dir, args.modes, overrides, args.top
            )
            print(
                f"### {name}: {len(queries)} queries, {count} memories, top={args.top}, "
                f"overrides={args.set or 'none'}\n"
            )
            intervals.print_report(name, results, TABLE_METRICS, **boot)
            print_latency(results)
            out[name] = results
            if args.previous is not None:
                worse += await run_previous(data_dir, name, queries, results, args, boot, out)
            if args.compare is not None:
                await ensure_channels(data_dir, {**overrides, **parse_overrides(args.compare)})
                cand = [
                    await run_mode(
                        data_dir,
                        r["mode"],
                        queries,
                        keys_of(data_dir),
                        {**overrides, **parse_overrides(args.compare)},
                        args.top,
                    )
                    for r in results
                ]
                out[name + "+compare"] = cand
                for base_res, cand_res in zip(results, cand, strict=True):
                    worse += intervals.print_paired(
                        name,
                        base_res,
                        cand_res,
                        PAIRED_METRICS,
                        base_label=" ".join(args.set) or "defaults",
                        cand_label=" ".join(args.compare),
                        **boot,
                    )
            for base_res in baseline.get(name, []):
                mine = [r for r in results if r["mode"] == base_res["mode"]]
                if mine:
                    worse += intervals.print_paired(
                        name,
                        base_res,
                        mine[0],
                        PAIRED_METRICS,
                        base_label=str(args.baseline),
                        cand_label="this run",
                        **boot,
                    )
    if args.compare is not None or args.previous is not None or baseline:
        print(
            "significantly worse (95% CI of the difference below 0): "
            + (", ".join(worse) or "none")
        )
    if args.out:
        args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1))


async def run_previous(
    data_dir: Path,
    name: str,
    queries: list[dict[str, Any]],
    results: list[dict[str, Any]],
    args: argparse.Namespace,
    boot: dict[str, int],
    out: dict[str, Any],
) -> list[str]:
    """The hybrid mode as the previous release ranks (``--previous`` over ``--set``) on
    the same data dir, its table, then this run's hybrid minus it (paired); returns the
    groups significantly worse. A channel the previous settings turn off stays in the
    index: a server not configured for it never reads it."""
    mine = [r for r in results if r["mode"] == "hybrid"]
    if not mine:
        return []
    label = " ".join(args.previous) or "defaults"
    overrides = {**parse_overrides(args.set), **parse_overrides(args.previous)}
    await ensure_channels(data_dir, overrides)
    prev = await run_mode(data_dir, "hybrid", queries, keys_of(data_dir), overrides, args.top)
    prev["mode"] = "hybrid"
    out[name + "+previous"] = [prev]
    print(f"### {name}: the previous release ({label})\n")
    intervals.print_report(name, [prev], TABLE_METRICS, **boot)
    print_latency([prev])
    return intervals.print_paired(
        name,
        prev,
        mine[0],
        PAIRED_METRICS,
        base_label=f"previous ({label})",
        cand_label="default",
        **boot,
    )


def keys_of(data_dir: Path) -> dict[str, str]:
    return json.loads((data_dir / "bench-keys.json").read_text())


if __name__ == "__main__":
    asyncio.run(main())
