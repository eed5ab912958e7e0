"""Building the static table from the bundled e5 model (the Model2Vec method).

Each kept vocabulary piece is run through the exact e5 graph on its own, as
``<s> [prefix] piece </s>``, and its row is the mean of that pass's token states (the
pooling e5 gives a text). ``embedders.static`` then gives a text the weighted mean of its
pieces' rows: a vector in e5's own space, ~0.1 ms, no model run.

This module computes raw rows (``piece_rows``) and chooses the pieces (``kept_pieces``);
``python -m training.static_build`` rebuilds the shipped table from the
installed model (``static_table.write``), and a test recomputes a sample of rows and
finds them equal to the shipped ones within quantisation.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcp_gateway.embedders import e5_onnx
from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer
from mcp_gateway.graphs import e5_file
from mcp_gateway.graphs.cache import graph_source

BATCH = 256  # pieces a forward pass: equal lengths, no padding, so batching is exact


def piece_scripts(piece: str) -> set[str]:
    """The scripts a vocabulary piece is written in: ``latin``, ``kana``, ``han``,
    ``thai``, ``digit``, ``symbol``, or ``other`` (any other script)."""
    out: set[str] = set()
    for c in piece:
        o = ord(c)
        if c == "\u2581":
            continue
        if o < 128 and c.isdigit():
            out.add("digit")
        elif (o < 128 or 0xC0 <= o < 0x250) and c.isalpha():
            out.add("latin")
        elif 0x3040 <= o < 0x3100 or 0x31F0 <= o < 0x3200 or 0xFF66 <= o < 0xFFA0:
            out.add("kana")
        elif 0x4E00 <= o < 0xA000 or 0x3400 <= o < 0x4DC0:
            out.add("han")
        elif 0x0E00 <= o < 0x0E80:
            out.add("thai")
        elif unicodedata.category(c)[0] in "PSZ" or c.isdigit():
            out.add("symbol")
        else:
            out.add("other")
    return out


def kept_pieces(model: e5_file.E5File, latin: int, han: int) -> np.ndarray:
    """Ids of the pieces the table keeps, sorted: every kana, Thai, digit and symbol
    piece, the ``latin`` best-scoring (most frequent in XLM-R's training text) pieces
    of ASCII letters, and the ``han`` best-scoring Han pieces; never the special tokens,
    an accented Latin piece (other European languages) or a piece of another script."""
    vocab = model.vocab
    special = {vocab.bos, vocab.eos, vocab.pad, vocab.unk}
    whole: list[int] = []
    by_kind: dict[str, list[int]] = {"latin": [], "han": []}
    for i, piece in enumerate(vocab.pieces):
        kinds = piece_scripts(piece)
        if i in special or not kinds or "other" in kinds:
            continue
        if "latin" in kinds:
            if piece.replace("\u2581", "").isascii():
                by_kind["latin"].append(i)
        elif kinds == {"han"}:
            by_kind["han"].append(i)
        else:  # kana (with or without han), thai, digits, symbols
            whole.append(i)
    scores = vocab.scores
    for kind, most in (("latin", latin), ("han", han)):
        ids = np.asarray(by_kind[kind], np.int64)
        whole.extend(ids[np.argsort(-scores[ids], kind="stable")][:most].tolist())
    return np.asarray(sorted(whole), np.int64)


class PieceRunner:
    """The exact e5 graph, one thread, fed pieces one a sequence."""

    def __init__(self, path: Path | None = None, threads: int = 1) -> None:
        import onnxruntime as ort

        path = path or e5_onnx.model_path("original")
        self.model = e5_file.load(path)
        self.tokenizer = UnigramTokenizer(self.model.vocab)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        source = graph_source("exact", [path])
        self.session: Any = ort.InferenceSession(
            source, options, providers=["CPUExecutionProvider"]
        )
        hidden = self.model.hidden
        self.positions = self.model.floats("emb.pos").reshape(self.model.max_positions, -1)
        self.type0 = self.model.floats("emb.type")[:hidden]

    def prefix_ids(self, prefix: str) -> list[int]:
        return self.tokenizer.encode(prefix.rstrip()) if prefix.strip() else []

    def piece_rows(self, ids: Sequence[int], prefix: str = "", state: str = "own") -> np.ndarray:
        """float32 [len(ids), hidden]: the last-layer state of each piece in
        ``<s> prefix piece </s>`` (``own``), or that pass's mean-pooled states (``mean``,
        the pooling e5 gives a text)."""
        head = [self.tokenizer.bos, *self.prefix_ids(prefix)]
        out = np.zeros((len(ids), self.model.hidden), np.float32)
        for a in range(0, len(ids), BATCH):
            part = np.asarray(ids[a : a + BATCH], np.int64)
            seq = np.empty((len(part), len(head) + 2), np.int64)
            seq[:, : len(head)] = head
            seq[:, len(head)] = part
            seq[:, -1] = self.tokenizer.eos
            emb = self.model.word_rows(seq) + self.positions[: seq.shape[1]] + self.type0
            mask = np.ones(seq.shape, np.float32)
            (hidden,) = self.session.run(None, {"emb": emb.astype(np.float32), "mask": mask})
            if state == "own":
                out[a : a + len(part)] = hidden[:, len(head)]
            else:
                out[a : a + len(part)] = hidden.astype(np.float64).mean(axis=1)
        return out


def project(raw: np.ndarray, dims: int, drop: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the raw rows: (mean [hidden], components [hidden, dims]), the ``drop``
    leading components left out. Centring removes the direction every row shares (all
    e5 states lie in a narrow cone), which would otherwise dominate a mean of rows; the
    leading components carry what separates pieces by form more than by meaning
    (measured on dev: dropping 6 helps both sets)."""
    mean = raw.astype(np.float64).mean(axis=0)
    centred = raw.astype(np.float64) - mean
    _, _, vt = np.linalg.svd(centred[:: max(1, len(centred) // 60_000)], full_matrices=False)
    return mean.astype(np.float32), vt[drop : drop + dims].T.astype(np.float32)


def piece_weights(scores: np.ndarray, a: float) -> np.ndarray:
    """SIF weights from the pieces' unigram log-probabilities: ``a / (a + p)``, p =
    exp(score): a frequent piece ("▁the", "の") says little about a text's topic."""
    p = np.exp(scores.astype(np.float64))
    out: np.ndarray = (a / (a + p)).astype(np.float32)
    return out


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and one float32 scale each (symmetric, the row's largest magnitude at
    127): the cosines of weighted means move by ~1e-3."""
    peak = np.maximum(np.abs(rows).max(axis=1), 1e-12)
    scale = (peak / 127.0).astype(np.float32)
    q = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


@dataclass(frozen=True)
class Recipe:
    """How the shipped table is built (chosen on dev: bench/LOG.md, "fast first from
    e5's own table")."""

    variant: str = "original"
    prefix: str = "passage: "
    state: str = "own"
    latin: int = 60_000
    han: int = 8_000
    dims: int = 128
    drop: int = 6
    a: float = 1e-5


RECIPE = Recipe()


def build(raw: np.ndarray, ids: np.ndarray, scores: np.ndarray, recipe: Recipe) -> dict[str, Any]:
    """The table's arrays from raw rows: ``rows`` int8 [n, dims], ``scales`` (the
    quantisation scale times the piece's weight), ``ids``, the PCA ``mean`` and
    ``components``."""
    mean, comps = project(raw, recipe.dims, recipe.drop)
    rows, scale = quantise((raw.astype(np.float32) - mean) @ comps)
    weights = piece_weights(scores[ids], recipe.a)
    return {
        "rows": rows,
        "scales": (scale * weights).astype(np.float32),
        "quant": scale,
        "ids": ids.astype(np.int32),
        "mean": mean,
        "components": comps,
    }


def write(table: dict[str, Any], recipe: Recipe, rows_file: Path, meta_file: Path) -> None:
    np.save(rows_file, table["rows"])
    meta = {k: v for k, v in table.items() if k != "rows"}
    np.savez(meta_file, **meta, variant=np.array(recipe.variant), prefix=np.array(recipe.prefix))


def main() -> None:
    import argparse
    import sys

    from mcp_gateway.embedders import static

    ap = argparse.ArgumentParser(description="Rebuild the static table from the installed e5.")
    ap.add_argument("--raw", help="raw rows already computed (bench/static_rows.py's npz)")
    ap.add_argument("--out", default=str(static.ROWS_FILE.with_suffix("")))
    args = ap.parse_args()
    runner = PieceRunner(e5_onnx.model_path(RECIPE.variant))
    ids = kept_pieces(runner.model, RECIPE.latin, RECIPE.han)
    if args.raw:
        raw_file = np.load(args.raw)
        if str(raw_file["prefix"]) != RECIPE.prefix:
            raise SystemExit(f"{args.raw} was run with prefix {str(raw_file['prefix'])!r}")
        where = np.searchsorted(raw_file["ids"], ids)
        if not np.array_equal(raw_file["ids"][where], ids):
            raise SystemExit(f"{args.raw} lacks some kept pieces")
        raw = raw_file[RECIPE.state][where].astype(np.float32)
    else:
        print(f"running {len(ids)} pieces through e5 (minutes)", file=sys.stderr)
        raw = runner.piece_rows(ids.tolist(), RECIPE.prefix, RECIPE.state)
    table = build(raw, ids, runner.model.vocab.scores, RECIPE)
    out = Path(args.out)
    write(table, RECIPE, out.with_suffix(".npy"), out.with_suffix(".npz"))
    print(f"{len(ids)} rows x {RECIPE.dims} -> {out}.npy/.npz", file=sys.stderr)


if __name__ == "__main__":
    main()
