"""Training the static table against e5's text vectors (Model2Vec's "tokenlearn").

``static_build`` distils each piece alone; a text's static vector (``static``: the
weighted mean of its pieces' rows, normalised) then only roughly follows e5's vector
of that text. Here the rows are trained so that it follows it closely: for each corpus
text, e5's passage vector is projected into the table's space (``target``) and the rows
of the text's pieces move to raise the cosine between the text's static vector and that
target (optionally with an L2 pull toward the distilled rows; the shipped recipe has
none: no pull measured better). Rows of pieces the corpus never holds are left exactly
as distilled, so a script the corpus lacks reads as before.

Numpy only: Adam with lazy (sparse) updates, minibatches, early stopping on held-back
texts. The trained table keeps the shipped format (int8 rows, a scale each, the same
ids), so ``static.StaticEmbedder`` reads it unchanged. The corpus and its e5 vectors are
the caller's (``bench/static_train.py``); ``write`` records how the table was made in
its meta (``trained``: which rows moved; ``train_*``: the recipe and the corpus).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TrainRecipe:
    """How the rows are trained (defaults: chosen on dev, bench/LOG.md, "fast first: a
    trained table"): ``l2`` the pull toward the distilled rows (in units of the rows'
    typical magnitude, on the rows a batch touches; any pull measured no better than
    none), ``lr`` Adam's step relative to that magnitude, ``epochs`` at most,
    ``patience`` epochs without a better validation cosine before stopping, ``centre``
    how the target is centred (``corpus``: the teacher vectors' own mean; ``table``: the
    piece states' PCA mean, which leaves the direction all e5 text vectors share in the
    target, so a cosine of ~0.99 is reached without learning what separates texts).

    No per-piece weight is learned: a row's norm already is its weight in the mean."""

    l2: float = 0.0
    lr: float = 0.05
    batch: int = 256
    epochs: int = 20
    patience: int = 2
    centre: str = "corpus"
    seed: int = 0


@dataclass
class Texts:
    """Texts as row indices: ``tokens`` every text's rows concatenated (in the order
    ``StaticEmbedder.pieces`` gives them), ``starts`` where each text begins (one more
    than the texts, the last the total), ``targets`` [texts, dims] unit vectors."""

    tokens: np.ndarray
    starts: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, pieces: list[np.ndarray], targets: np.ndarray) -> Texts:
        keep = [i for i, p in enumerate(pieces) if len(p)]  # a text with no piece says nothing
        lens = np.array([len(pieces[i]) for i in keep], np.int64)
        starts = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        tokens = np.concatenate([pieces[i] for i in keep]).astype(np.int64)
        return cls(tokens, starts, targets[keep].astype(np.float32))

    def __len__(self) -> int:
        return len(self.starts) - 1

    def subset(self, which: np.ndarray) -> Texts:
        parts = [self.tokens[self.starts[i] : self.starts[i + 1]] for i in which]
        return Texts.of(parts, self.targets[which])


def target(teacher: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """Teacher vectors [n, hidden] into the table's space, unit rows: centred by ``mean``
    and projected on the table's own PCA ``components`` (the same leading components left
    out as the recipe leaves out)."""
    out = (teacher.astype(np.float32) - mean) @ components
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return np.asarray(out, np.float32)


def _forward(
    rows: np.ndarray, weights: np.ndarray, texts: Texts, which: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For texts ``which``: their tokens, each token's text (0..len(which)-1), the
    texts' summed vectors, norms and cosines with their targets."""
    spans = [np.arange(texts.starts[i], texts.starts[i + 1]) for i in which]
    lens = np.array([len(s) for s in spans], np.int64)
    tok = texts.tokens[np.concatenate(spans)]
    owner = np.repeat(np.arange(len(which)), lens)
    contrib = weights[tok, None] * rows[tok]
    sums = np.add.reduceat(contrib, np.concatenate([[0], np.cumsum(lens)[:-1]]), axis=0)
    norms = np.maximum(np.linalg.norm(sums, axis=1), 1e-12)
    cos = np.einsum("ij,ij->i", sums, texts.targets[which]) / norms
    return tok, owner, sums, norms, cos


def mean_cosine(rows: np.ndarray, weights: np.ndarray, texts: Texts) -> float:
    """The mean cosine of the texts' static vectors with their targets."""
    out = []
    for a in range(0, len(texts), 4096):
        which = np.arange(a, min(a + 4096, len(texts)))
        out.append(_forward(rows, weights, texts, which)[4])
    return float(np.concatenate(out).mean()) if out else 0.0


def train(
    rows0: np.ndarray,
    weights: np.ndarray,
    fit: Texts,
    valid: Texts,
    recipe: TrainRecipe,
    log: Any = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Trained float rows (a copy; ``rows0`` untouched), the bool mask of rows that
    moved, and a summary (validation cosines before/after, epochs run). A row no
    ``fit`` text holds is returned bit for bit as given."""
    rng = np.random.default_rng(recipe.seed)
    rows = rows0.astype(np.float32).copy()
    anchor = rows0.astype(np.float32)
    m = np.zeros_like(rows)
    v = np.zeros_like(rows)
    steps = np.zeros(len(rows), np.int64)  # lazy Adam: each row's own step count
    scale = float(np.median(np.abs(anchor[np.unique(fit.tokens)]))) or 1.0
    lr = recipe.lr * scale
    b1, b2, eps = 0.9, 0.999, 1e-8 * scale
    best_rows, best = rows.copy(), mean_cosine(rows, weights, valid)
    first, waited, epoch = best, 0, 0
    probe = fit.subset(np.arange(min(len(fit), 4096)))  # the fit's own cosine, for the log
    for epoch in range(1, recipe.epochs + 1):
        order = rng.permutation(len(fit))
        for a in range(0, len(order), recipe.batch):
            which = order[a : a + recipe.batch]
            tok, owner, sums, norms, cos = _forward(rows, weights, fit, which)
            unit = sums / norms[:, None]
            tgt = fit.targets[which]
            # d(1 - cos)/d sum = -(t - cos * s) / |sum|, averaged over the batch
            gsum = -(tgt - cos[:, None] * unit) / norms[:, None] / len(which)
            gtok = weights[tok, None] * gsum[owner]
            uniq, inv = np.unique(tok, return_inverse=True)
            grad = np.zeros((len(uniq), rows.shape[1]), np.float32)
            np.add.at(grad, inv, gtok)
            grad += recipe.l2 * (rows[uniq] - anchor[uniq]) / scale**2
            steps[uniq] += 1
            m[uniq] = b1 * m[uniq] + (1 - b1) * grad
            v[uniq] = b2 * v[uniq] + (1 - b2) * grad * grad
            t = steps[uniq, None]
            mhat = m[uniq] / (1 - b1**t)
            vhat = v[uniq] / (1 - b2**t)
            rows[uniq] -= lr * mhat / (np.sqrt(vhat) + eps)
        now = mean_cosine(rows, weights, valid)
        if log is not None:
            fitted = mean_cosine(rows, weights, probe)
            log(f"epoch {epoch}: validation cosine {now:.4f} (fit {fitted:.4f})")
        if now > best + 1e-5:
            best, best_rows, waited = now, rows.copy(), 0
        else:
            waited += 1
            if waited >= recipe.patience:
                break
    moved = np.zeros(len(rows), bool)
    moved[np.unique(fit.tokens)] = True
    summary = {"valid_before": first, "valid_after": best, "epochs": epoch}
    return best_rows, moved, summary


def quantise_moved(
    rows: np.ndarray, moved: np.ndarray, q0: np.ndarray, quant0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and quantisation scales: the moved rows quantised afresh (as
    ``static_build.quantise``), the others the shipped bytes unchanged."""
    from training.static_build import quantise

    q, quant = np.array(q0, np.int8, copy=True), np.array(quant0, np.float32, copy=True)
    if moved.any():
        q[moved], quant[moved] = quantise(rows[moved])
    return q, quant


def write(
    meta: dict[str, Any],
    q: np.ndarray,
    quant: np.ndarray,
    moved: np.ndarray,
    centre: np.ndarray,
    recipe: TrainRecipe,
    corpus: dict[str, Any],
    rows_file: Path,
    meta_file: Path,
) -> None:
    """The trained table in the shipped format: ``meta`` the distilled table's arrays
    (ids, mean, components, variant, prefix, and the weights inside ``scales``) with the
    new rows and scales, the mask of trained rows, the targets' ``centre`` (a query's e5
    vector minus it, projected, lands where the trained rows aim) and the recipe and
    corpus recorded."""
    weights = meta["scales"] / meta["quant"]
    out: dict[str, Any] = {
        k: np.asarray(meta[k]) for k in ("ids", "mean", "components", "variant", "prefix")
    }
    out |= {"quant": quant, "scales": (quant * weights).astype(np.float32), "trained": moved}
    out["centre"] = np.asarray(centre, np.float32)
    out |= {f"train_{k}": np.array(v) for k, v in {**asdict(recipe), **corpus}.items()}
    np.save(rows_file, q)
    np.savez(meta_file, **out)


def aligned_components(
    teacher: np.ndarray,
    centre: np.ndarray,
    rows: np.ndarray,
    weights: np.ndarray,
    pieces: list[np.ndarray],
    dim: int,
) -> np.ndarray:
    """[hidden, dim] projection of another teacher's vectors into the table's space: the
    teacher's own leading ``dim`` principal components, turned (orthogonal Procrustes)
    so that the texts' projected targets lie nearest the table's own vectors of the same
    texts. A row no training text holds keeps its bytes, so the targets must share the
    table's axes for such a row to mean the same thing beside a trained one."""
    centred = teacher.astype(np.float32) - centre
    _, _, vt = np.linalg.svd(centred[: min(len(centred), 20_000)], full_matrices=False)
    pca = vt[:dim].T.astype(np.float32)
    t = centred @ pca
    t /= np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    s = np.zeros_like(t)
    for i, p in enumerate(pieces):
        if len(p):
            s[i] = weights[p] @ rows[p]
    s /= np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)
    u, _, vt2 = np.linalg.svd(t.T @ s)
    return np.asarray(pca @ (u @ vt2), np.float32)
