#!/usr/bin/python3
"""Writes examples/models/tiny_cnn.onnx: a small image classifier shaped like a PyTorch
export, with what such exports carry (BatchNorm beside each Conv, a dynamic batch dim, a
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain, Identity and Dropout leftovers).

Needs Debian's python3-onnx and python3-numpy. The output is checked in; rerun only to
change it. Weights come from a fixed seed, so the file is reproducible.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261202)


def weight(name, *shape, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def conv_bn_relu(nodes, inits, x, name, cin, cout):
    inits += [
        weight(f"{name}.weight", cout, cin, 3, 3),
        weight(f"{name}.bias", cout),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), f"{name}.bn.scale"),
        weight(f"{name}.bn.bias", cout),
        weight(f"{name}.bn.mean", cout),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), f"{name}.bn.var"),
    ]
    nodes += [
        helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [f"{name}.conv"],
                         name=f"{name}/Conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization",
                         [f"{name}.conv", f"{name}.bn.scale", f"{name}.bn.bias", f"{name}.bn.mean",
                          f"{name}.bn.var"], [f"{name}.bn"], name=f"{name}/BatchNormalization",
                         epsilon=1e-5),
        helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"], name=f"{name}/Relu"),
    ]
    return f"{name}.relu"


def main():
    nodes, inits = [], []
    x = conv_bn_relu(nodes, inits, "input", "block1", 3, 8)
    nodes.append(helper.make_node("MaxPool", [x], ["pool1"], name="pool1/MaxPool",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    x = conv_bn_relu(nodes, inits, "pool1", "block2", 8, 16)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap/GlobalAveragePool"))
    # x.view(x.size(0), -1) as PyTorch exports it with a dynamic batch.
    inits += [
        numpy_helper.from_array(np.array(0, dtype=np.int64), "const_0"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axes_0"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "const_minus_1"),
    ]
    nodes += [
        helper.make_node("Shape", ["gap"], ["gap_shape"], name="flatten/Shape"),
        helper.make_node("Gather", ["gap_shape", "const_0"], ["batch"], name="flatten/Gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes_0"], ["batch_1d"], name="flatten/Unsqueeze"),
        helper.make_node("Concat", ["batch_1d", "const_minus_1"], ["flat_shape"],
                         name="flatten/Concat", axis=0),
        helper.make_node("Reshape", ["gap", "flat_shape"], ["flat"], name="flatten/Reshape"),
        helper.make_node("Dropout", ["flat"], ["dropped"], name="classifier/Dropout"),
        helper.make_node("Identity", ["dropped"], ["features"], name="classifier/Identity"),
    ]
    inits += [weight("fc.weight", 10, 16), weight("fc.bias", 10)]
    nodes.append(helper.make_node("Gemm", ["features", "fc.weight", "fc.bias"], ["logits"],
                                  name="fc/Gemm", transB=1))
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        inits)
    model = helper.make_model(graph, producer_name="onnxkit-examples", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "tiny_cnn.onnx")
    onnx.save(model, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
