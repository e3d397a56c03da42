"""tests/tools/onnx_cost_graph.py - a small imported graph for the cost model's and the memory
estimate's test (tests/unit/test_sim.c, test_imported_figures): onnx.helper only, no torch.

Usage: /usr/bin/python3 tests/tools/onnx_cost_graph.py OUT.onnx
Writes x (N, 3, 8, 8) -> Conv 3->4 3x3 pads 1 -> Sigmoid -> Mul by a (4, 1, 1) constant
(broadcast) -> MaxPool 2x2 -> Flatten -> Gemm (10, 64) transB -> logits (N, 10): rows the
built-in networks do not use (Sigmoid, a broadcast Mul, Gemm), a convolution's workspace and
a max pool's argmax. Exit 77 when python3-onnx is missing (the test skips)."""
import sys

try:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save
except ImportError:
    sys.exit(77)


def main():
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.weight"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "conv.bias"),
        numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.standard_normal((10, 64)).astype(np.float32), "fc.weight"),
        numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "fc.bias"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["m"]),
        helper.make_node("MaxPool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cost_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    save(model, sys.argv[1])


if __name__ == "__main__":
    main()
