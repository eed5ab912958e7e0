"""The static table's trainer (``training.static_train``) on a tiny synthetic corpus."""

from __future__ import annotations

import numpy as np

from training import static_train


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
    from training.static_build import quantise

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


def test_another_teachers_space_is_turned_onto_the_tables() -> None:
    """A teacher whose vectors are the table's own text vectors in other axes (a random
    orthogonal embedding into more dimensions, shifted): its projection lands on the
    table's vectors, so untrained rows keep their meaning beside trained ones."""
    rng = np.random.default_rng(6)
    rows = rng.normal(size=(40, 8)).astype(np.float32)
    weights = np.ones(40, np.float32)
    pieces = [rng.integers(0, 40, rng.integers(3, 9)) for _ in range(300)]
    own = np.stack([rows[p].sum(axis=0) for p in pieces])
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    other_axes = np.linalg.qr(rng.normal(size=(12, 8)))[0].astype(np.float32)  # 12 x 8
    shift = rng.normal(size=12).astype(np.float32)
    teacher = own @ other_axes.T + shift
    centre = teacher.mean(axis=0)
    comps = static_train.aligned_components(teacher, centre, rows, weights, pieces, 8)
    assert comps.shape == (12, 8)
    got = static_train.target(teacher, centre, comps)
    # the teacher's centring moves each target a little off the table's own vector
    assert float((got * own).sum(axis=1).mean()) > 0.95
    # its principal axes alone, unturned, do not line up
    _, _, vt = np.linalg.svd(teacher - centre, full_matrices=False)
    plain = static_train.target(teacher, centre, vt[:8].T)
    assert float((plain * own).sum(axis=1).mean()) < 0.5
