"""A faster query graph: three of each layer's four matrices as smoothed int8.

Why: a new query's round trip is mostly the encoder (~10 ms of ~25 over stdio on the
2-core machine). ``MatMulNBits`` multiplies a short query (~18 token rows) against 4-bit
blocks whose scales apply every 32 inputs; onnxruntime's ``DynamicQuantizeMatMul`` over
int8 weights with one scale per output column runs the same product in less than half the
time (measured: the whole encoder 10.2 -> 4.3 ms with all four matrices, 6.4 ms with the
three below). Its activations are quantised per tensor, which alone costs accuracy (a
query's vector at a cosine of 0.997 of the exact one: -0.01 to -0.02 nDCG@10 on the
benchmark); SmoothQuant fixes most of it: each input channel ``j`` is divided by
``s_j = max|x_j| ** a / max|W_j| ** (1 - a)`` before quantising and the weights multiplied by
it (exact in float), so the few outlier channels of e5's states no longer set the whole
tensor's scale. The feed-forward "down" matrix (its input: GELU output, 1,536 channels)
stays 4-bit: smoothed it still costs the most (cosine 0.99948 with it, 0.99973 without).

Only queries use this graph. Passages keep the exact graph, so the stored vectors (and
an index built before this) are the same, and a query's vector is within a cosine of
0.9995 of the exact one (tests/test_embedders_e5_int8.py); quality on the benchmark:
bench/LOG.md.

``max|x_j|`` per channel comes from calibration texts that are not the quality benchmark
(``bench/e5_smooth_stats.py`` writes ``e5_smooth_<variant>.npz`` beside this module).
Without the file for a variant the engine keeps the exact graph for queries too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from mcp_gateway.graphs.e5_file import E5File, dequantise

log = logging.getLogger(__name__)

SMOOTHED = ("qkv", "attn", "up")  # the linears (by output suffix) that run as int8
ALPHA = 0.8  # migration strength: best of 0.5-1.0 on calibration-text cosines
_HERE = Path(__file__).resolve().parent

Stats = dict[str, np.ndarray]  # "L3.qkv" -> max |input| per input channel


def stats_path(variant: str) -> Path:
    return _HERE / f"e5_smooth_{variant}.npz"


def load_stats(path: Path, model: E5File) -> Stats | None:
    """The calibration in ``path``, or None (no file, or one for another model shape)."""
    if not path.exists():
        log.info("no int8 calibration at %s: queries use the exact graph", path)
        return None
    with np.load(path) as data:
        stats = {name: data[name].astype(np.float32) for name in data.files}
    want = {name for layer in range(model.layers) for name in linear_names(layer)}
    if set(stats) != want or any(v.shape != (model.hidden,) for v in stats.values()):
        log.warning("%s does not fit this model: queries use the exact graph", path)
        return None
    return stats


def linear_names(layer: int) -> list[str]:
    return [f"L{layer}.{kind}" for kind in SMOOTHED]


def linear_input(name: str) -> str:
    """The graph tensor a smoothed linear reads (``e5_graph``'s names)."""
    layer, kind = name[1:].split(".")
    n = int(layer)
    return {
        "qkv": "x0" if n == 0 else f"L{n - 1}.x2",
        "attn": f"L{n}.ctx.flat",
        "up": f"L{n}.x1",
    }[kind]


def dequantised(model: E5File, weights: list[str], rows: list[int]) -> np.ndarray:
    """The Q4_0 matrices' exact float values, stacked along the output axis: [N, K]."""
    mats = [
        dequantise(*model.q4_blocks(name, rows=n)) for name, n in zip(weights, rows, strict=True)
    ]
    return np.concatenate(mats)


def smoothed(weights: np.ndarray, amax: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(1 / s per input channel, int8 weights [K, N] of ``W * s``, scale per output)."""
    wmax = np.abs(weights).max(axis=0)
    s = (np.maximum(amax, 1e-5) ** ALPHA / np.maximum(wmax, 1e-5) ** (1 - ALPHA)).astype(np.float32)
    q, col_scale = int8_columns(weights * s[None, :])
    return (1.0 / s).astype(np.float32), q, col_scale


def int8_columns(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights`` [N, K] -> ``DynamicQuantizeMatMul``'s int8 B [K, N] (symmetric, one
    scale per output) and those scales [N]."""
    col_scale = (np.maximum(np.abs(weights).max(axis=1), 1e-12) / 127.0).astype(np.float32)
    q = np.clip(np.round(weights / col_scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.T), col_scale
