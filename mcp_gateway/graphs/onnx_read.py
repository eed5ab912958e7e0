"""Just enough of the ONNX protobuf format to read one model back: its initializers
(raw little-endian data) and its nodes' operator, inputs and outputs.

Why not the ``onnx`` package: the same reason as ``onnx_proto`` (the writer): importing it
costs ~1 s and it is a dev dependency only. The field numbers are those of
``onnx/onnx.proto3``; ``tests/test_embedders_minilm_graph.py`` reads a model with this and
with the ``onnx`` package and compares.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_}


@dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Graph:
    initializers: dict[str, np.ndarray]  # read-only views over the file's bytes
    nodes: list[Node]


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of each field: an int (varint), or the bytes of a
    length-delimited field; fixed-width fields are skipped (none read here has one)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield key >> 3, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            yield key >> 3, buf[pos : pos + size]
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _packed(buf: memoryview) -> list[int]:
    out, pos = [], 0
    while pos < len(buf):
        value, pos = _varint(buf, pos)
        out.append(value)
    return out


def _tensor(buf: memoryview) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    name, dtype, raw = "", 0, None
    for no, value in _fields(buf):
        if no == 1:
            dims += _packed(value) if isinstance(value, memoryview) else [value]
        elif no == 2 and isinstance(value, int):
            dtype = value
        elif no == 8 and isinstance(value, memoryview):
            name = bytes(value).decode()
        elif no == 9 and isinstance(value, memoryview):
            raw = value
    if dtype not in _DTYPES or raw is None:
        raise ValueError(f"initializer {name!r}: no raw data of a known type ({dtype})")
    array = np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
    return name, array.reshape(dims)


def _node(buf: memoryview) -> Node:
    inputs, outputs, op = [], [], ""
    for no, value in _fields(buf):
        if no in (1, 2, 4) and isinstance(value, memoryview):
            text = bytes(value).decode()
            if no == 1:
                inputs.append(text)
            elif no == 2:
                outputs.append(text)
            else:
                op = text
    return Node(op, tuple(inputs), tuple(outputs))


def read(data: bytes) -> Graph:
    """The main graph of the serialised ModelProto ``data``."""
    graph = next(v for no, v in _fields(memoryview(data)) if no == 7)
    assert isinstance(graph, memoryview)
    initializers: dict[str, np.ndarray] = {}
    nodes: list[Node] = []
    for no, value in _fields(graph):
        if no == 1 and isinstance(value, memoryview):
            nodes.append(_node(value))
        elif no == 5 and isinstance(value, memoryview):
            name, array = _tensor(value)
            initializers[name] = array
    return Graph(initializers, nodes)
