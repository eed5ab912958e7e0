"""A corpus of 100k+ DISTINCT real texts, embedded once, loaded as kioku data dirs.

Issue 34 asks for a 100k benchmark on real text, not tiled copies. The texts here are the
docstrings and comments of the installed Python (the stdlib and this venv's
site-packages: prose written by people about code, as assistants' notes are), split into
paragraphs of 40-800 characters, with code-only lines, doctests and licence boilerplate
dropped and exact and near-exact duplicates folded (lowercased, digits and punctuation
dropped, whitespace collapsed), plus the quality sets' 2,135 memories (en/ja/th). The
same files give the same corpus: files are read in sorted order and the shuffle is seeded.

Questions (``questions``): the conversational set's 359 hand-written ones (en/ja/th)
and, from paragraphs sampled with a seed, each paragraph's first sentence with its
stopwords dropped (at most 12 words, lowercased: how an assistant's search reads).

Steps (each resumable; outputs under ``bench/results/distinct``, git-ignored):

    python bench/distinct_corpus.py corpus              # corpus.jsonl + its description
    nice -n 10 python bench/distinct_corpus.py embed --worker 0 --workers 2 [--int8]
    python bench/distinct_corpus.py load --size 10000   # data dir distinct-10000
    python bench/distinct_corpus.py load --size 100000  # graph built as the owner does

``load`` waits for chunks ``embed`` has not written yet, so it can run beside it.

``embed`` runs the bundled e5 on the document path (``encode_documents``: the dense
vector and the latent terms the index holds) in chunks of 500 texts, corpus order
(shuffled: the first 10,000 are the 10k dir's random subset), each chunk a file.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import ast
import asyncio
import collections
import hashlib
import io
import json
import pickle
import random
import re
import sysconfig
import time
import tokenize

OUT = _HERE / "results" / "distinct"
CHUNK = 500
MIN_CHARS, MAX_CHARS = 40, 800
BOILER = re.compile(
    r"licen[cs]e|copyright|warranty|spdx|all rights reserved|redistribut|"
    r"-\*- coding|type: ignore|noqa|pragma|pylint|fmt: (on|off)|isort|mypy:",
    re.I,
)
CODEISH = re.compile(  # a line of code, a doctest, a shell line
    r"^\s*(>>>|\.\.\.|\$ |[{}\[\]()]|[\w.]+\s*=|"
    r"def |class |import |from \S+ import|return |if |for |@)"
)
STOP = frozenset(
    "a an the of to in on for and or is are was be been it its this that these those with "
    "as by at from into if then than so not no do does can will would should may might "
    "which who what when where how why there their they them we you your our i he she "
    "has have had also any all each some such only other more most same very just but "
    "used use using see e g i.e. e.g. etc".split()
)


def roots() -> list[Path]:
    """The stdlib and every site-packages folder of this interpreter."""
    paths = sysconfig.get_paths()
    out = {Path(paths["stdlib"]), Path(paths["purelib"]), Path(paths["platlib"])}
    return sorted(p for p in out if p.exists())


def source_files() -> list[Path]:
    files: list[Path] = []
    for root in roots():
        for path in sorted(root.rglob("*.py")):
            if "site-packages" in path.parts and root.name != "site-packages":
                continue  # the stdlib root holds no site-packages of ours
            files.append(path)
    return files


def docstrings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                out.append(doc)
    return out


def comment_blocks(source: str) -> list[str]:
    """Runs of consecutive comment lines, each run one text (a blank ``#`` line splits)."""
    out: list[str] = []
    run: list[str] = []
    last = -2
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.COMMENT:
                continue
            body = tok.string.lstrip("#").strip()
            line = tok.start[0]
            if line != last + 1 or not body:
                if run:
                    out.append(" ".join(run))
                run = []
            if body:
                run.append(body)
            last = line
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if run:
        out.append(" ".join(run))
    return out


def paragraphs(doc: str) -> list[str]:
    """A docstring's paragraphs (split at blank lines), lines joined, code lines dropped."""
    out = []
    for block in re.split(r"\n\s*\n", doc):
        lines = [ln.strip() for ln in block.splitlines()]
        prose = [ln for ln in lines if ln and not CODEISH.match(ln)]
        if len(prose) >= max(1, len(lines) // 2):
            out.append(" ".join(prose))
    return out


def prose_enough(text: str) -> bool:
    """Mostly words: letters and spaces are >= 75 % of it, >= 6 words, no boilerplate."""
    if not MIN_CHARS <= len(text) <= MAX_CHARS or BOILER.search(text):
        return False
    letters = sum(c.isalpha() or c.isspace() for c in text)
    return letters >= 0.75 * len(text) and len(text.split()) >= 6


def near_key(text: str) -> str:
    """Equal for exact and near-exact copies: case, digits, punctuation, spacing."""
    return " ".join(re.sub(r"[\W\d_]+", " ", text.lower()).split())


def quality_memories() -> list[str]:
    out: list[str] = []
    for name in ("data", "conv"):
        with open(_HERE / "quality" / name / "memories.jsonl", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f if line.strip()]
    return out


def build_corpus() -> tuple[list[dict[str, str]], dict[str, object]]:
    seen: set[str] = set()
    rows: list[dict[str, str]] = []
    dropped = collections.Counter[str]()
    for text in quality_memories():
        seen.add(near_key(text))
        rows.append({"text": text, "source": "quality"})
    for path in source_files():
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            dropped["unparsable file"] += 1
            continue
        kind = "stdlib" if "site-packages" not in path.parts else "site-packages"
        pieces = [(p, "docstring") for d in docstrings(tree) for p in paragraphs(d)]
        pieces += [(c, "comment") for c in comment_blocks(source)]
        for text, what in pieces:
            if not prose_enough(text):
                dropped[what + " not prose / length"] += 1
                continue
            key = near_key(text)
            if key in seen:
                dropped[what + " duplicate"] += 1
                continue
            seen.add(key)
            rows.append({"text": text, "source": f"{kind} {what}"})
    # a seeded hash order, not a shuffle: a source added later leaves the others' order
    rows.sort(key=lambda r: hashlib.sha1(("34:" + r["text"]).encode()).digest())
    return rows, {"dropped": dict(dropped)}


def describe(rows: list[dict[str, str]]) -> str:
    lengths = sorted(len(r["text"]) for r in rows)
    at = [lengths[int(q * (len(lengths) - 1))] for q in (0.1, 0.5, 0.9, 0.99)]
    sources = collections.Counter(r["source"] for r in rows)
    scripts = collections.Counter(script(r["text"]) for r in rows)
    return (
        f"{len(rows):,} distinct texts; chars p10/p50/p90/p99 {at}; mean "
        f"{sum(lengths) / len(lengths):.0f}\n  sources {dict(sources)}\n  scripts {dict(scripts)}"
    )


def script(text: str) -> str:
    if any("\u0e00" <= c <= "\u0e7f" for c in text):
        return "th"
    if any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text):
        return "ja"
    return "latin"


def load_rows() -> list[dict[str, str]]:
    with open(OUT / "corpus.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def questions(n_corpus: int = 400, seed: int = 5) -> list[str]:
    """The conversational set's real questions, then ``n_corpus`` questions written from
    sampled corpus paragraphs (the first sentence's content words), interleaved by seed."""
    import peers

    real = peers.real_questions(seed)
    rows = [r for r in load_rows() if r["source"] != "quality"]
    rng = random.Random(seed)
    made: list[str] = []
    for row in rng.sample(rows, n_corpus * 2):
        first = re.split(r"(?<=[.!?])\s", row["text"], maxsplit=1)[0]
        words = [w for w in re.findall(r"[\w.]+", first.lower()) if w not in STOP]
        if len(words) >= 3:
            made.append(" ".join(words[:12]))
        if len(made) == n_corpus:
            break
    out = real + made
    rng.shuffle(out)
    return out


def question_half(half: str) -> list[str]:
    """``questions()`` split in two: even positions to tune on, odd ones to report."""
    qs = questions()
    return qs if half == "all" else qs[0 if half == "tune" else 1 :: 2]


def chunk_dir(int8: bool) -> Path:
    return OUT / ("chunks-int8" if int8 else "chunks")


def kept(
    int8: bool, out: dict[str, tuple[object, object]] | None = None, read: set[str] | None = None
) -> dict[str, tuple[object, object]]:
    """Every text embedded so far: its dense vector and latent terms (added to ``out``
    from the chunk files not in ``read`` yet, when given)."""
    out = {} if out is None else out
    read = set() if read is None else read
    for path in sorted(chunk_dir(int8).glob("*.pkl")):
        if path.name not in read:
            read.add(path.name)
            for text, dense, terms in pickle.loads(path.read_bytes()):
                out[text] = (dense, terms)
    return out


async def embed(worker: int, workers: int, int8: bool, upto: int) -> None:
    """The corpus's first ``upto`` texts not embedded yet, in chunks; worker ``w`` of
    ``k`` takes every k-th chunk. Chunks are keyed by their texts, so a corpus grown by
    another source later reuses every vector made."""
    from mcp_gateway.common.settings import EmbedderSettings
    from mcp_gateway.embedders import build_embedder

    have = kept(int8)
    texts = [r["text"] for r in load_rows()[:upto] if r["text"] not in have]
    embedder = build_embedder(EmbedderSettings(int8_documents=int8, document_nice=0))
    await embedder.start()
    chunk_dir(int8).mkdir(parents=True, exist_ok=True)
    started, done = time.perf_counter(), 0
    for i in range(worker, (len(texts) + CHUNK - 1) // CHUNK, workers):
        part = texts[i * CHUNK : (i + 1) * CHUNK]
        name = hashlib.sha1("\n".join(part).encode()).hexdigest()[:16]
        order = sorted(range(len(part)), key=lambda j: len(part[j]))  # less padding
        got: list[object] = [None] * len(part)
        for s in range(0, len(order), 32):  # the indexer's batch_size
            idx = order[s : s + 32]
            encs = await embedder.encode_documents([part[j] for j in idx])
            for j, enc in zip(idx, encs, strict=True):
                got[j] = (part[j], enc.dense, enc.terms)
        path = chunk_dir(int8) / f"{name}.pkl"
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(got))
        tmp.rename(path)
        done += len(part)
        rate = done / (time.perf_counter() - started)
        print(f"chunk {i}: {done} texts, {rate:.1f}/s", flush=True)
    await embedder.aclose()


async def load(n: int, int8: bool, data: Path) -> None:
    """A data dir of the corpus's first ``n`` texts with their kept vectors, through the
    path ``peers._load_kioku`` takes (notes, the vector store, the index), then the
    graph built as the owner's graph watcher builds it."""
    import numpy as np

    from mcp_gateway.common.inputs import NoteFields
    from mcp_gateway.common.settings import KiokuSettings
    from mcp_gateway.indexing.indexer import note_document, note_point
    from mcp_gateway.services import Services
    from mcp_gateway.services.app import open_app
    from mcp_gateway.stores.vectors import content_hash

    texts = [r["text"] for r in load_rows()][:n]
    read: set[str] = set()
    have = kept(int8, None, read)
    settings = KiokuSettings(data_dir=data)
    started = time.perf_counter()
    async with open_app(settings, run_jobs=False) as app:
        for start in range(0, n, 1000):
            notes, points = [], []
            while any(t not in have for t in texts[start : start + 1000]):
                await asyncio.sleep(15)  # ``embed`` still running: its next chunks
                kept(int8, have, read)
            for i in range(start, min(n, start + 1000)):
                note = await app.notes.add(
                    NoteFields(text=texts[i], type="note"), settings.namespace
                )
                dense, terms = have[texts[i]]
                vec = np.asarray(dense, dtype=np.float64)
                notes.append(note)
                points.append(note_point(note, (vec / np.linalg.norm(vec)).tolist(), None, terms))
            await app.vectors.put(
                "note",
                app.embedder.model_id,
                [
                    (nt.id, content_hash(note_document(nt)), p.dense, p.latent)
                    for nt, p in zip(notes, points, strict=True)
                ],
            )
            await app.index.upsert(points)
            await app.notes.mark_embedded(
                {nt.id: nt.updated_at for nt in notes}, app.embedder.model_id
            )
        print(f"  {n:,} notes loaded in {time.perf_counter() - started:.0f} s", flush=True)
        wants = getattr(app.index.current, "wants_graph", None)
        if wants is not None and await wants():
            t = time.perf_counter()
            status = await Services.over(app).rebuild.rebuild()
            print(f"  kioku graph: {status.state} in {time.perf_counter() - t:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["corpus", "embed", "load", "questions"])
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--int8", action="store_true", help="embedder.int8_documents vectors")
    ap.add_argument("--upto", type=int, default=100_000, help="embed the first N texts")
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--data", type=Path, help="the data dir (default under results)")
    args = ap.parse_args()
    if args.step == "corpus":
        rows, info = build_corpus()
        OUT.mkdir(parents=True, exist_ok=True)
        with open(OUT / "corpus.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        text = describe(rows) + f"\n  {info}"
        (OUT / "corpus.txt").write_text(text + "\n")
        print(text)
    elif args.step == "embed":
        asyncio.run(embed(args.worker, args.workers, args.int8, args.upto))
    elif args.step == "questions":
        for q in questions()[:20]:
            print(q)
    else:
        suffix = "-int8" if args.int8 else ""
        data = args.data or OUT / f"distinct-{args.size}{suffix}"
        asyncio.run(load(args.size, args.int8, data))


if __name__ == "__main__":
    main()
