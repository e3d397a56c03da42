#!/usr/bin/env python3
"""tests/tools/onnx_hostile.py OUTDIR [overflow] - writes the hostile ONNX files (files
built to cost the importer memory, time or stack) into OUTDIR, at test time (never committed): the protobuf bytes are written by
hand, so no onnx package is needed and nothing checks them on the way. With "overflow",
the files whose shape arithmetic overflows instead (OVERFLOW below, each named for what it
does; test_onnx_import's test_refuses_shape_overflow says what each must be refused for).

  pad8000.onnx        a Pad of 8000 on each side of an 8x8 image before a 16-filter Conv
                      (opset 13): about 33 GB of activations at batch 1 from 1.5 KB;
  convpads8000.onnx   the same with the Conv's own pads of 8000;
  empty_inits.onnx    150000 empty initializer entries (300 KB; over ONNX_MAX_REPEATED);
  nested_if.onnx      3000 If nodes, each holding the next graph in its then_branch.

Each file but the last is otherwise a valid model (Conv, GlobalAveragePool, Flatten, Gemm),
so only the bounds refuse it.
"""
import struct
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """A length-delimited field (message, string, bytes)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vfield(num, value):
    """A varint field."""
    return varint(num << 3) + varint(value & 0xFFFFFFFFFFFFFFFF)


FLOAT, INT64 = 1, 7
ATTR_INT, ATTR_INTS, ATTR_GRAPH = 2, 7, 5


def tensor(name, dims, dtype, raw):
    return b"".join(vfield(1, d) for d in dims) + vfield(2, dtype) + field(8, name) + field(9, raw)


def floats(name, dims):
    n = 1
    for d in dims:
        n *= d
    return tensor(name, dims, FLOAT, b"\0" * (4 * n))


def ints_attr(name, values):
    return field(1, name) + b"".join(vfield(8, v) for v in values) + vfield(20, ATTR_INTS)


def int_attr(name, value):
    return field(1, name) + vfield(3, value) + vfield(20, ATTR_INT)


def node(op, inputs, outputs, attrs=()):
    return (b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs) +
            field(3, op + "_" + outputs[0]) + field(4, op) + b"".join(field(5, a) for a in attrs))


def value_info(name, dims):
    shape = b"".join(field(1, vfield(1, d)) for d in dims)
    return field(1, name) + field(2, field(1, vfield(1, FLOAT) + field(2, shape)))


def model(graph):
    return vfield(1, 8) + field(8, vfield(2, 13)) + field(7, graph)


def conv_net(pad_node, conv_pads):
    """x (1,1,8,8) -> [Pad] -> Conv 16x3x3 [pads] -> GlobalAveragePool -> Flatten -> Gemm -> y (1,10)."""
    nodes, inits = [], [floats("w", [16, 1, 3, 3]), floats("b", [16]), floats("fw", [10, 16]), floats("fb", [10])]
    src = "x"
    if pad_node:
        inits.append(tensor("pads", [8], INT64, struct.pack("<8q", 0, 0, 8000, 8000, 0, 0, 8000, 8000)))
        nodes.append(node("Pad", ["x", "pads"], ["p"]))
        src = "p"
    attrs = [ints_attr("kernel_shape", [3, 3])]
    if conv_pads:
        attrs.append(ints_attr("pads", [8000, 8000, 8000, 8000]))
    nodes.append(node("Conv", [src, "w", "b"], ["c"], attrs))
    nodes.append(node("GlobalAveragePool", ["c"], ["g"]))
    nodes.append(node("Flatten", ["g"], ["f"], [int_attr("axis", 1)]))
    nodes.append(node("Gemm", ["f", "fw", "fb"], ["y"], [int_attr("transB", 1)]))
    graph = (b"".join(field(1, n) for n in nodes) + field(2, "hostile") + b"".join(field(5, t) for t in inits) +
             field(11, value_info("x", [1, 1, 8, 8])) + field(12, value_info("y", [1, 10])))
    return model(graph)


def empty_inits(count):
    graph = (field(1, node("Relu", ["x"], ["y"])) + field(2, "empty") + field(5, b"") * count +
             field(11, value_info("x", [1, 1, 8, 8])) + field(12, value_info("y", [1, 10])))
    return model(graph)


def nested_if(levels):
    graph = field(2, "inner")
    for _ in range(levels):
        attr = field(1, "then_branch") + field(6, graph) + vfield(20, ATTR_GRAPH)
        graph = field(1, field(4, "If") + field(5, attr))
    return model(graph)


def graph_of(nodes, inits, x_dims, y_dims):
    """A model of nodes and initializers, input x and output y of the dims given."""
    graph = (b"".join(field(1, n) for n in nodes) + field(2, "overflow") + b"".join(field(5, t) for t in inits) +
             field(11, value_info("x", x_dims)) + field(12, value_info("y", y_dims)))
    return model(graph)


def ints(name, values):
    return tensor(name, [len(values)], INT64, struct.pack("<%dq" % len(values), *values))


def head(src, n_in):
    """Gemm of src (N, n_in) to y (N, 10), and its two initializers."""
    return (node("Gemm", [src, "hw", "hb"], ["y"], [int_attr("transB", 1)]),
            [floats("hw", [10, n_in]), floats("hb", [10])])


def mul_wrap(side=28):
    """x (1, 1, side, side) flattened to f (N, side^2); Shape(f) = [N, 784] times [1, 2^60 + 1]
    the shape of a Reshape of f: 784 * (2^60 + 1) wraps to 784 in int64 (any multiple of 16
    does: the fuzzer's seed is side 4). A vector without the batch is folded in doubles,
    which refuse an integer past 2^53; one with it is not."""
    gemm, hinits = head("r", side * side)
    nodes = [node("Flatten", ["x"], ["f"], [int_attr("axis", 1)]), node("Shape", ["f"], ["s"]),
             node("Mul", ["s", "c"], ["m"]), node("Reshape", ["f", "m"], ["r"]), gemm]
    return graph_of(nodes, [ints("c", [1, (1 << 60) + 1])] + hinits, [1, 1, side, side], [1, 10])


def split_wrap():
    """x (1, 4) split into sizes 2^63 - 1, 2^63 - 1 and 6, whose sum wraps to 4."""
    big = (1 << 63) - 1
    nodes = [node("Split", ["x", "sizes"], ["a", "b", "c"], [int_attr("axis", 1)]), node("Relu", ["c"], ["y"])]
    return graph_of(nodes, [ints("sizes", [big, big, 6])], [1, 4], [1, 4])


def conv_dilated(attrs, kh):
    """x (1, 1, 8, 8) -> Conv of a (1, 1, kh, 1) weight and attrs -> GlobalAveragePool ->
    Flatten -> Gemm -> y (1, 10)."""
    gemm, hinits = head("f", 1)
    nodes = [node("Conv", ["x", "w"], ["c"], attrs), node("GlobalAveragePool", ["c"], ["g"]),
             node("Flatten", ["g"], ["f"], [int_attr("axis", 1)]), gemm]
    return graph_of(nodes, [floats("w", [1, 1, kh, 1])] + hinits, [1, 1, 8, 8], [1, 10])


def str_attr(name, value):
    return field(1, name) + field(4, value) + vfield(20, 3)  # AttributeProto.STRING


def expand_huge():
    """x (1, 1, 1, 1, 1) expanded to the batch and (2^24, 2^24, 2^24, 2^24): 2^96 elements
    per sample, whose folding's width 2^48 wraps an int."""
    d = 1 << 24
    nodes = [node("Expand", ["x", "to"], ["e"]), node("Relu", ["e"], ["y"])]
    return graph_of(nodes, [ints("to", [1, d, d, d, d])], [1, 1, 1, 1, 1], [1, 10])


def concat_huge():
    """x (1, 2^24, 1) joined along axis 1, 129 times: the 128th join's axis is 2^31."""
    nodes = [node("Concat", ["x"] * 129, ["k"], [int_attr("axis", 1)]), node("Relu", ["k"], ["y"])]
    return graph_of(nodes, [], [1, 1 << 24, 1], [1, 10])


def flatten_folded():
    """A Constant of shape (0, 2^24, 2^24, 2^24, 2^24) (no elements) flattened at axis 1:
    its second axis is 2^96, which wraps to 0 in int64."""
    d = 1 << 24
    value = field(1, "value") + field(5, tensor("empty", [0, d, d, d, d], FLOAT, b"")) + vfield(20, 4)
    nodes = [node("Constant", [], ["k"], [value]), node("Flatten", ["k"], ["kf"], [int_attr("axis", 1)]),
             node("Relu", ["x"], ["y"])]
    return graph_of(nodes, [], [1, 10], [1, 10])


BIG = 1 << 24
OVERFLOW = {
    "mul_wrap.onnx": mul_wrap,
    "split_wrap.onnx": split_wrap,
    "dilation_pads.onnx": lambda: conv_dilated([ints_attr("dilations", [BIG, 1]), str_attr("auto_pad", "SAME_UPPER")],
                                               129),
    "group_wrap.onnx": lambda: conv_dilated([int_attr("group", (1 << 32) + 1)], 3),
    "input_huge.onnx": lambda: graph_of([node("Relu", ["x"], ["y"])], [], [1, BIG, BIG, BIG, BIG], [1, 10]),
    "expand_huge.onnx": expand_huge,
    "concat_huge.onnx": concat_huge,
    "flatten_fold.onnx": flatten_folded,
}


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "overflow"):
        sys.exit("usage: onnx_hostile.py OUTDIR [overflow]")
    out = sys.argv[1]
    if len(sys.argv) == 3:
        files = {name: make() for name, make in OVERFLOW.items()}
    else:
        files = {
            "pad8000.onnx": conv_net(True, False),
            "convpads8000.onnx": conv_net(False, True),
            "empty_inits.onnx": empty_inits(150000),
            "nested_if.onnx": nested_if(3000),
        }
    for name, data in files.items():
        with open(f"{out}/{name}", "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
