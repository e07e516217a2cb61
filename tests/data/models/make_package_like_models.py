#!/usr/bin/env python3
"""Writes small models shaped like trained models that ship in PyPI/npm packages, each the
smallest reproduction of a way such a model broke `onnxkit simplify` with default options
(bench/real_model_packages.tsv lists the real ones; they are fetched, never committed):

- paddle_unknown_dims_tiny: a classifier whose input is declared float[-1,3,"?","?"], as
  paddle2onnx writes unknown dims (rapidocr's ch_ppocr_mobile_v2.0_cls_infer.onnx): -1 is an
  unknown dim, as ONNX Runtime reads it, not a bad shape, and "?" is no symbol that H and W
  share (its test data is 48x64).
- vad_unnamed_state_tiny: an LSTM whose input is float[?,?] and whose carried state is
  float[2,?,8] with no dim names (Silero VAD v5 as silero-vad and @ricky0123/vad-web ship it):
  the state's unnamed dim 1 is the batch and must get the input's batch in the check.

Each folder gets model.onnx and test_data_set_0 (inputs and ONNX Runtime's outputs), for
`onnxkit conformance`. Run with the project's .venv (onnx, onnxruntime):
    .venv/bin/python tests/data/models/make_package_like_models.py tests/data/models
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(26)


def weights(name, shape, scale=0.3):
    return numpy_helper.from_array((scale * RNG.standard_normal(shape)).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def unknown_dim_input(name, dims):
    """A float input whose dims are ints (-1 included: written as a value), strings (names) or
    None (no value, no name)."""
    value = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
    shape = value.type.tensor_type.shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        elif d is not None:
            dim.dim_value = d
    return value


def paddle_unknown_dims():
    x = unknown_dim_input("x", [-1, 3, "?", "?"])
    out = helper.make_tensor_value_info("prob", TensorProto.FLOAT, None)
    out.type.tensor_type.shape.dim.add().dim_value = -1
    out.type.tensor_type.shape.dim.add().dim_value = 2
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("HardSigmoid", ["c1"], ["g1"], alpha=0.2, beta=0.5),
        helper.make_node("Mul", ["c1", "g1"], ["a1"]),
        helper.make_node("MaxPool", ["a1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p1"], ["gap"]),
        helper.make_node("Reshape", ["gap", "flat_shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    init = [weights("w1", [8, 3, 3, 3]), weights("b1", [8]), ints("flat_shape", [-1, 8]),
            weights("fc", [8, 2])]
    graph = helper.make_graph(nodes, "paddle_unknown_dims", [x], [out], init)
    feeds = {"x": RNG.standard_normal((1, 3, 48, 64)).astype(np.float32)}
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), feeds


def vad_unnamed_state():
    hidden = 8
    inputs = [unknown_dim_input("input", [None, None]),
              unknown_dim_input("state", [2, None, hidden])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("stateN", TensorProto.FLOAT, None)]
    nodes = [
        # [batch, samples] -> [samples / 4, batch, 4]: frames of 4 samples, time first.
        helper.make_node("Reshape", ["input", "frames_shape"], ["frames"]),
        helper.make_node("Transpose", ["frames"], ["x"], perm=[1, 0, 2]),
        helper.make_node("Gather", ["state", "zero"], ["h0"], axis=0),
        helper.make_node("Gather", ["state", "one"], ["c0"], axis=0),
        helper.make_node("Unsqueeze", ["h0", "axes0"], ["h"]),
        helper.make_node("Unsqueeze", ["c0", "axes0"], ["c"]),
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h", "c"], ["y", "hn", "cn"],
                         hidden_size=hidden),
        helper.make_node("Concat", ["hn", "cn"], ["stateN"], axis=0),
        helper.make_node("Squeeze", ["hn", "axes0"], ["last"]),
        helper.make_node("MatMul", ["last", "head"], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["output"]),
    ]
    init = [ints("frames_shape", [0, -1, 4]), ints("zero", 0), ints("one", 1),
            ints("axes0", [0]), weights("W", [1, 4 * hidden, 4]),
            weights("R", [1, 4 * hidden, hidden]), weights("B", [1, 8 * hidden], 0.1),
            weights("head", [hidden, 1])]
    graph = helper.make_graph(nodes, "vad_unnamed_state", inputs, outputs, init)
    feeds = {"input": (0.1 * RNG.standard_normal((1, 64))).astype(np.float32),
             "state": (0.1 * RNG.standard_normal((2, 1, hidden))).astype(np.float32)}
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), feeds


def write(folder, model, feeds):
    model.ir_version = 7
    model.producer_name = "onnxkit-package-like"
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    data = os.path.join(folder, "test_data_set_0")
    for i, (name, value) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(value, name), os.path.join(data, f"input_{i}.pb"))
    for i, (meta, value) in enumerate(zip(session.get_outputs(), outputs)):
        onnx.save_tensor(numpy_helper.from_array(value, meta.name),
                         os.path.join(data, f"output_{i}.pb"))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(root, "paddle_unknown_dims_tiny"), *paddle_unknown_dims())
    write(os.path.join(root, "vad_unnamed_state_tiny"), *vad_unnamed_state())


if __name__ == "__main__":
    main()
