"""The static table's trainer (``embedders.static_train``) on a tiny synthetic corpus."""

from __future__ import annotations

import numpy as np

from mcp_gateway.embedders import static_train


def _corpus(rng: np.random.Generator, truth: np.ndarray, n: int) -> static_train.Texts:
    """Texts of 3-8 pieces among rows 0..39 (rows 40.. never occur), each text's target
    the normalised mean of its pieces' rows in ``truth``."""
    pieces = [rng.integers(0, 40, rng.integers(3, 9)) for _ in range(n)]
    targets = np.stack([truth[p].sum(axis=0) for p in pieces])
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    return static_train.Texts.of(pieces, targets)


def test_training_raises_the_cosine_and_keeps_untouched_rows() -> None:
    rng = np.random.default_rng(3)
    truth = rng.normal(size=(50, 8)).astype(np.float32)
    start = (truth + rng.normal(scale=1.5, size=truth.shape)).astype(np.float32)
    weights = np.ones(50, np.float32)
    fit, valid = _corpus(rng, truth, 400), _corpus(rng, truth, 100)
    recipe = static_train.TrainRecipe(l2=0.0, lr=0.05, batch=32, epochs=30, patience=3)
    before = static_train.mean_cosine(start, weights, valid)
    rows, moved, summary = static_train.train(start, weights, fit, valid, recipe)
    after = static_train.mean_cosine(rows, weights, valid)
    assert after > before + 0.1 and after > 0.9
    assert summary["valid_after"] == after
    assert moved[:40].all() and not moved[40:].any()
    np.testing.assert_array_equal(rows[40:], start[40:])  # bit for bit
    # a strong pull toward the distilled rows keeps them closer
    pulled, _, _ = static_train.train(
        start, weights, fit, valid, static_train.TrainRecipe(l2=10.0, lr=0.05, batch=32)
    )
    assert np.abs(pulled - start).sum() < np.abs(rows - start).sum()


def test_requantising_keeps_the_bytes_of_rows_that_did_not_move() -> None:
    from mcp_gateway.embedders.static_build import quantise

    rng = np.random.default_rng(4)
    rows0 = rng.normal(size=(20, 8)).astype(np.float32)
    q0, quant0 = quantise(rows0)
    moved = np.zeros(20, bool)
    moved[:5] = True
    trained = rows0.copy()
    trained[:5] *= 3.0
    q, quant = static_train.quantise_moved(trained, moved, q0, quant0)
    np.testing.assert_array_equal(q[5:], q0[5:])
    np.testing.assert_array_equal(quant[5:], quant0[5:])
    np.testing.assert_allclose(quant[:5], quant0[:5] * 3.0, rtol=1e-6)
    assert np.abs(q[:5].astype(np.float32) * quant[:5, None] - trained[:5]).max() <= quant.max()


def test_the_target_is_the_teacher_projected_and_unit() -> None:
    rng = np.random.default_rng(5)
    teacher = rng.normal(size=(6, 12)).astype(np.float32)
    mean = rng.normal(size=12).astype(np.float32)
    comps = np.linalg.qr(rng.normal(size=(12, 4)))[0].astype(np.float32)
    out = static_train.target(teacher, mean, comps)
    expect = (teacher - mean) @ comps
    expect /= np.linalg.norm(expect, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
