# SPDX-License-Identifier: Apache-2.0
"""Writes the demo's model, a small 10-way classifier on float32
[1,3,224,224] NCHW ("images" -> "scores" [1,10]), or with "batch" its twin
on [batch,3,224,224] (an open first dimension: tensorbatch's batches of
any size, one model call each), with Python's standard
library alone: the ONNX protobuf is encoded here by hand, so the demo needs
neither python3-onnx nor numpy (and their BLAS, LAPACK and protobuf) only to
write 1 KB. The graph is the one tests/gst/infer_models.py calls the
classifier (1x1 Conv to 8 channels, Relu, GlobalAveragePool, Flatten, Gemm,
Softmax); the weights are fixed pseudo-random numbers, so its scores mean
nothing but are the same on every machine.

  demo_model.py OUT.onnx [batch]
"""

import struct
import sys


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # int64 fields: two's complement, as protobuf sends them
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3 | 0) + varint(value)


def field_bytes(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


FLOAT = 1  # TensorProto.DataType
ATTR_INT = 2  # AttributeProto.AttributeType


def dimension(d):
    # TensorShapeProto.Dimension: dim_value (1) or, for a name, dim_param (2)
    return field_bytes(2, d) if isinstance(d, str) else field_varint(1, d)


def tensor_type(dims):
    # TypeProto { tensor_type: { elem_type, shape { dim { dim_value | dim_param } } } }
    shape = b"".join(field_bytes(1, dimension(d)) for d in dims)
    return field_bytes(1, field_varint(1, FLOAT) + field_bytes(2, shape))


def value_info(name, dims):
    return field_bytes(1, name) + field_bytes(2, tensor_type(dims))


def initializer(name, dims, values):
    raw = struct.pack("<%df" % len(values), *values)
    return b"".join(field_varint(1, d) for d in dims) + field_varint(2, FLOAT) + field_bytes(8, name) + field_bytes(9, raw)


def node(op, inputs, outputs, int_attrs=()):
    body = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    body += field_bytes(3, outputs[0]) + field_bytes(4, op)
    for key, value in int_attrs:
        body += field_bytes(5, field_bytes(1, key) + field_varint(20, ATTR_INT) + field_varint(3, value))
    return body


def weights(count, seed):
    """`count` numbers in [-1, 1) from a 32-bit LCG (Numerical Recipes')."""
    out = []
    state = seed
    for _ in range(count):
        state = (1664525 * state + 1013904223) & 0xFFFFFFFF
        out.append(state / 2**31 - 1.0)
    return out


def model(batch=1):
    nodes = [
        node("Conv", ["images", "conv"], ["features"]),
        node("Relu", ["features"], ["active"]),
        node("GlobalAveragePool", ["active"], ["pooled"]),
        node("Flatten", ["pooled"], ["flat"]),
        node("Gemm", ["flat", "gemm"], ["logits"]),
        node("Softmax", ["logits"], ["scores"], [("axis", 1)]),
    ]
    graph = b"".join(field_bytes(1, n) for n in nodes) + field_bytes(2, "classifier")
    graph += field_bytes(5, initializer("conv", [8, 3, 1, 1], weights(24, 25)))
    graph += field_bytes(5, initializer("gemm", [8, 10], [4 * w for w in weights(80, 27)]))
    graph += field_bytes(11, value_info("images", [batch, 3, 224, 224]))
    graph += field_bytes(12, value_info("scores", [batch, 10]))
    # ModelProto: ir_version 8 (what ONNX Runtime 1.21 reads), producer, graph, opset 13.
    return (field_varint(1, 8) + field_bytes(2, "gst-tensormem demo") + field_bytes(7, graph) +
            field_bytes(8, field_bytes(1, "") + field_varint(2, 13)))


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "batch"):
        sys.exit("usage: demo_model.py OUT.onnx [batch]")
    with open(argv[1], "wb") as f:
        f.write(model("batch" if len(argv) == 3 else 1))


if __name__ == "__main__":
    main(sys.argv)
