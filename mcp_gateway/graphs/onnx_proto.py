"""Just enough of the ONNX protobuf format to write one model: nodes, attributes,
initializers, typed inputs and outputs, opsets.

Why not the ``onnx`` package: importing it costs ~1 s (it pulls in its whole reference
implementation), paid by every process that loads the embedder, the one-shot CLI
included, for a model that takes 0.1 s to build. The wire format is stable (ONNX only ever
adds fields) and small: the field numbers below are those of ``onnx/onnx.proto3``.
``tests/test_embedders_onnx_proto.py`` checks the output with the ``onnx`` package's own
parser and checker (a dev dependency).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

FLOAT, UINT8, INT8, INT64, FLOAT16 = 1, 2, 3, 7, 10  # TensorProto.DataType
_DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.float16): FLOAT16,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.int64): INT64,
}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 two's complement, as protobuf writes negative varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field_no: int, value: int) -> bytes:
    return _varint(field_no << 3) + _varint(value)


def _bytes(field_no: int, value: bytes) -> bytes:
    return _varint(field_no << 3 | 2) + _varint(len(value)) + value


def _str(field_no: int, value: str) -> bytes:
    return _bytes(field_no, value.encode())


def _strs(field_no: int, values: Iterable[str]) -> bytes:
    return b"".join(_str(field_no, v) for v in values)


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding ``array`` (float32 or 16, int8, uint8 or int64) as
    little-endian raw data."""
    data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, _DTYPES[data.dtype]) + _str(8, name) + _bytes(9, data.tobytes())


def _attribute(name: str, value: object) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float | list | tuple):
        raise TypeError(f"attribute {name}: unsupported value {value!r}")
    if isinstance(value, float):
        return (
            _str(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
        )
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    return _str(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)


def node(
    op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", **attrs: object
) -> bytes:
    """A NodeProto; attributes are ints, floats or lists of ints."""
    out = _strs(1, inputs) + _strs(2, outputs) + _str(3, outputs[0]) + _str(4, op)
    out += b"".join(_bytes(5, _attribute(k, v)) for k, v in sorted(attrs.items()))
    return out + (_str(7, domain) if domain else b"")


def value_info(name: str, elem_type: int, dims: Sequence[str | int]) -> bytes:
    """A ValueInfoProto: a graph input or output of tensor type, named or fixed dims."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass
class Model:
    name: str
    opsets: dict[str, int]  # domain ("" = ai.onnx) -> version
    ir_version: int = 9
    nodes: list[bytes] = field(default_factory=list)
    initializers: list[bytes] = field(default_factory=list)
    inputs: list[bytes] = field(default_factory=list)
    outputs: list[bytes] = field(default_factory=list)

    def constant(self, name: str, value: np.ndarray) -> str:
        """``value`` as an initializer named ``name``; returns the name."""
        self.initializers.append(tensor(name, value))
        return name

    def op(
        self,
        op: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        domain: str = "",
        **attrs: object,
    ) -> str:
        """One node; returns its first output's name."""
        self.nodes.append(node(op, inputs, outputs, domain, **attrs))
        return outputs[0]

    def split_heads(self, qkv: str, prefix: str) -> tuple[str, str, str]:
        """A BERT layer's fused q|k|v projection as attention heads: q and v
        [batch, heads, tokens, head dim], k [batch, heads, head dim, tokens] (ready for
        q @ k); needs the ``by_head`` shape constant. Returns the three tensors' names."""
        q, k, v = (f"{prefix}.{t}" for t in "qkv")
        self.op("Split", [qkv], [q, k, v], axis=-1, num_outputs=3)
        for t in (q, k, v):
            self.op("Reshape", [t, "by_head"], [t + ".h"])
        qt = self.op("Transpose", [q + ".h"], [q + ".t"], perm=[0, 2, 1, 3])
        kt = self.op("Transpose", [k + ".h"], [k + ".t"], perm=[0, 2, 3, 1])
        vt = self.op("Transpose", [v + ".h"], [v + ".t"], perm=[0, 2, 1, 3])
        return qt, kt, vt

    def serialise(self) -> bytes:
        graph = b"".join(_bytes(1, n) for n in self.nodes) + _str(2, self.name)
        graph += b"".join(_bytes(5, t) for t in self.initializers)
        graph += b"".join(_bytes(11, v) for v in self.inputs)
        graph += b"".join(_bytes(12, v) for v in self.outputs)
        opsets = b"".join(
            _bytes(8, (_str(1, d) if d else b"") + _int(2, v)) for d, v in self.opsets.items()
        )
        return _int(1, self.ir_version) + opsets + _bytes(7, graph)
