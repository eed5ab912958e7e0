"""Our ONNX writer, read back by the ``onnx`` package's own parser and checker."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from mcp_gateway.embedders.e5_onnx import model_path
from mcp_gateway.graphs import e5_file, e5_graph, e5_int8
from mcp_gateway.graphs import onnx_proto as proto


def small_model() -> bytes:
    m = proto.Model("t", {"": 18})
    weight = np.arange(6, dtype=np.float32).reshape(3, 2)
    m.initializers.append(proto.tensor("w", weight))
    m.initializers.append(proto.tensor("axes", np.array([-1], np.int64)))
    m.nodes.append(proto.node("MatMul", ["x", "w"], ["y"]))
    m.nodes.append(proto.node("ReduceSum", ["y", "axes"], ["s"], keepdims=0))
    m.nodes.append(proto.node("LeakyRelu", ["s"], ["out"], alpha=0.25))
    m.nodes.append(proto.node("Transpose", ["y"], ["yt"], perm=[1, 0]))
    m.inputs.append(proto.value_info("x", proto.FLOAT, ["n", 3]))
    m.outputs += [
        proto.value_info("out", proto.FLOAT, ["n"]),
        proto.value_info("yt", proto.FLOAT, [2, "n"]),
    ]
    return m.serialise()


def test_fields_read_back_as_written() -> None:
    model = onnx.load_from_string(small_model())
    onnx.checker.check_model(model, full_check=True)
    g = model.graph
    assert model.ir_version == 9 and model.opset_import[0].version == 18
    assert [n.op_type for n in g.node] == ["MatMul", "ReduceSum", "LeakyRelu", "Transpose"]
    np.testing.assert_array_equal(
        numpy_helper.to_array(g.initializer[0]), np.arange(6).reshape(3, 2)
    )
    assert numpy_helper.to_array(g.initializer[1]).tolist() == [-1]  # a negative int64
    attrs = {a.name: onnx.helper.get_attribute_value(a) for n in g.node for a in n.attribute}
    assert attrs == {"keepdims": 0, "alpha": 0.25, "perm": [1, 0]}
    dims = g.output[1].type.tensor_type.shape.dim
    assert (dims[0].dim_value, dims[1].dim_param) == (2, "n")


def test_onnxruntime_runs_it() -> None:
    session = ort.InferenceSession(small_model(), providers=["CPUExecutionProvider"])
    x = np.array([[1, 0, 0], [0, 1, 1]], np.float32)
    out, yt = session.run(None, {"x": x})
    y = x @ np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(yt, y.T)
    np.testing.assert_allclose(out, y.sum(-1))  # all positive: LeakyRelu leaves them


def test_the_e5_graph_passes_the_checker() -> None:
    model = onnx.load_from_string(e5_graph.build(e5_file.load(model_path("original"))))
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulNBits") == 12 * 4  # qkv, attention out, up, down per layer
    assert {o.domain for o in model.opset_import} == {"", "com.microsoft"}


def test_the_int8_query_graph_passes_the_checker() -> None:
    model_file = e5_file.load(model_path("original"))
    stats = e5_int8.load_stats(e5_int8.stats_path("original"), model_file)
    assert stats is not None
    model = onnx.load_from_string(e5_graph.build(model_file, int8=stats))
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("DynamicQuantizeMatMul") == 12 * 3  # qkv, attention out, up
    assert ops.count("MatMulNBits") == 12  # down stays 4-bit
    weights = {t.name: t for t in model.graph.initializer}
    assert weights["L0.qkv.B"].data_type == onnx.TensorProto.INT8


def test_unsupported_attribute_values_are_refused() -> None:
    with pytest.raises(TypeError, match="unsupported"):
        proto.node("X", ["a"], ["b"], flag=True)
