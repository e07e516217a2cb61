"""Small models in ONNX Runtime's QOperator format (com.microsoft QLinearAdd, QLinearMul,
QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
QLinearWhere, QGemm), with ORT's outputs, for onnxkit's tests.

    /work/main/.venv/bin/python bench/quantize_qoperator_models.py [OUT_DIR]   # default tests/data/models_int8/

Two kinds of cases, each OUT_DIR/NAME/model.onnx + test_data_set_0/{input,output}_N.pb with the
outputs computed by onnxruntime (one thread, no graph optimization, so ORT's own kernels give
the reference; onnxruntime is a test-data maker here, never a dependency of onnxkit):
- qop_cnn_* / qop_mlp_*: fp32 models built here (a CNN with a residual Add, LeakyRelu, Sigmoid
  gate (Mul), Concat, GlobalAveragePool and a Gemm head; an MLP with Gemm, Mul and Softmax),
  quantized by ORT's quantize_static in QOperator format: uint8 and int8 activations, per
  tensor and per channel.
- qop_op_*: one com.microsoft node each, written directly, over shapes, broadcasts and
  parameters the models do not reach (scalar sides, zero points at the ends of the range,
  scales far apart), so each kernel is compared with ORT's element by element.
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 17


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def make_cnn(rng):
    c = 8
    nodes, inits = [], []

    def conv(name, x, cin, cout, k=3):
        inits.append(init(name + "_w", (rng.normal(0, 0.4, (cout, cin, k, k))).astype(np.float32)))
        inits.append(init(name + "_b", rng.normal(0, 0.1, cout).astype(np.float32)))
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name=name,
                                      pads=[k // 2] * 4))
        return name

    x = conv("conv0", "input", 3, c)
    nodes.append(helper.make_node("Relu", [x], ["relu0"], name="relu0"))
    y = conv("conv1", "relu0", c, c)
    nodes.append(helper.make_node("Add", ["relu0", y], ["residual"], name="residual_add"))
    nodes.append(helper.make_node("LeakyRelu", ["residual"], ["leaky"], name="leaky", alpha=0.1))
    g = conv("gate_conv", "leaky", c, c, 1)
    nodes.append(helper.make_node("Sigmoid", [g], ["gate"], name="gate_sigmoid"))
    nodes.append(helper.make_node("Mul", ["leaky", "gate"], ["gated"], name="gate_mul"))
    z = conv("conv2", "leaky", c, c)
    nodes.append(helper.make_node("Concat", ["gated", z], ["cat"], name="concat", axis=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["cat"], ["pooled"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"))
    inits.append(init("fc_w", rng.normal(0, 0.3, (10, 2 * c)).astype(np.float32)))
    inits.append(init("fc_b", rng.normal(0, 0.1, 10).astype(np.float32)))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "qop_cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def make_mlp(rng):
    nodes, inits = [], []

    def gemm(name, x, cin, cout, trans_b):
        w = rng.normal(0, 0.25, (cout, cin) if trans_b else (cin, cout)).astype(np.float32)
        inits.append(init(name + "_w", w))
        inits.append(init(name + "_b", rng.normal(0, 0.1, cout).astype(np.float32)))
        nodes.append(helper.make_node("Gemm", [x, name + "_w", name + "_b"], [name], name=name,
                                      transB=trans_b))
        return name

    gemm("fc0", "input", 32, 64, 1)
    nodes.append(helper.make_node("Relu", ["fc0"], ["relu0"], name="relu0"))
    gemm("fc1", "relu0", 64, 64, 0)
    gemm("fc_gate", "relu0", 64, 64, 1)
    nodes.append(helper.make_node("Mul", ["fc1", "fc_gate"], ["prod"], name="mul"))
    gemm("fc2", "prod", 64, 10, 1)
    nodes.append(helper.make_node("Softmax", ["fc2"], ["probs"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "qop_mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


class Reader(CalibrationDataReader):
    def __init__(self, name, shape, rng, count=8):
        self.it = iter([{name: rng.normal(0, 1, shape).astype(np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self.it, None)


def ort_outputs(model_path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds), [o.name for o in session.get_outputs()]


def write_case(model_path, feeds, out_dir):
    folder = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(folder, exist_ok=True)
    shutil.copy(model_path, os.path.join(out_dir, "model.onnx"))
    outputs, names = ort_outputs(model_path, feeds)
    for i, (name, value) in enumerate(feeds.items()):
        with open(os.path.join(folder, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
    for i, (name, value) in enumerate(zip(names, outputs)):
        with open(os.path.join(folder, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
    ops = sorted({(n.domain + "::" if n.domain else "") + n.op_type
                  for n in onnx.load(model_path).graph.node})
    print(f"{os.path.basename(out_dir)}: {os.path.getsize(model_path)} bytes, ops {ops}")


def model_cases(out_root, tmp):
    rng = np.random.default_rng(28)
    for kind, make, shape in [("cnn", make_cnn, [1, 3, 16, 16]), ("mlp", make_mlp, [4, 32])]:
        fp32 = os.path.join(tmp, f"{kind}.onnx")
        onnx.save(make(rng), fp32)
        feeds = {"input": rng.normal(0, 1, shape).astype(np.float32)}
        for suffix, options in [
            ("u8", dict(activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)),
            ("u8s8_per_channel", dict(activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                      per_channel=True)),
            ("s8", dict(activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)),
            ("s8_per_channel", dict(activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                    per_channel=True)),
        ]:
            out = os.path.join(tmp, f"{kind}_{suffix}.onnx")
            quantize_static(fp32, out, Reader("input", shape, np.random.default_rng(1)),
                            quant_format=QuantFormat.QOperator, **options)
            write_case(out, feeds, os.path.join(out_root, f"qop_{kind}_{suffix}"))


def op_case(out_root, tmp, name, node, inputs, params, out_type, feeds):
    """One com.microsoft node: `inputs` are (name, elem_type, shape) graph inputs, `params`
    initializers."""
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(node.output[0], out_type, None)], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                     helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    write_case(path, feeds, os.path.join(out_root, name))


def op_cases(out_root, tmp):
    rng = np.random.default_rng(2028)
    for np_type, t in [(np.uint8, TensorProto.UINT8), (np.int8, TensorProto.INT8)]:
        info = np.iinfo(np_type)
        tag = "u8" if np_type == np.uint8 else "s8"

        def q(shape):
            return rng.integers(info.min, info.max + 1, shape, dtype=np.int64).astype(np_type)

        def sp(prefix, scale, zp):
            return [init(prefix + "_scale", np.float32(scale)), init(prefix + "_zp", np_type(zp))]

        # Binary ops over every broadcast the kernels tell apart, scales near and far apart.
        for op in ["QLinearAdd", "QLinearMul"]:
            for label, a_shape, b_shape in [("same", [2, 3, 5, 7], [2, 3, 5, 7]),
                                            ("channel", [2, 4, 3, 5], [1, 4, 1, 1]),
                                            ("scalar_a", [1], [3, 37]),
                                            ("scalar_b", [3, 37], []),
                                            ("inner", [2, 6, 33], [33]),
                                            ("outer", [4, 1], [1, 19])]:
                for k, (sa, sb, sc) in enumerate([(0.02, 0.03, 0.05), (0.5, 0.001, 0.04)]):
                    za, zb, zc = [int(v) for v in rng.integers(info.min, info.max + 1, 3)]
                    name = f"qop_op_{op[7:].lower()}_{label}_{tag}_{k}"
                    node = helper.make_node(op, ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp",
                                                 "c_scale", "c_zp"], ["c"], domain="com.microsoft")
                    op_case(out_root, tmp, name, node, [("a", t, a_shape), ("b", t, b_shape)],
                            sp("a", sa, za) + sp("b", sb, zb) + sp("c", sc, zc), t,
                            {"a": q(a_shape), "b": q(b_shape)})
        # Lookup ops: every input value, several parameter sets.
        every = np.arange(256, dtype=np.int64).astype(np.uint8).view(np_type).reshape(1, 4, 8, 8)
        for k, (sx, sy) in enumerate([(0.05, 1 / 256), (0.2, 0.03), (0.01, 0.02)]):
            zx, zy = [int(v) for v in rng.integers(info.min, info.max + 1, 2)]
            for op, attrs in [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.13})]:
                node = helper.make_node(op, ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                                        domain="com.microsoft", **attrs)
                op_case(out_root, tmp, f"qop_op_{op[7:].lower()}_{tag}_{k}", node,
                        [("x", t, list(every.shape))], sp("x", sx, zx) + sp("y", sy, zy), t,
                        {"x": every})
        # Global average pool, NCHW and NHWC, images of several sizes.
        for k, (shape, channels_last) in enumerate([([2, 5, 7, 7], 0), ([1, 16, 3, 1], 0),
                                                    ([2, 6, 6, 3], 1)]):
            zx, zy = [int(v) for v in rng.integers(info.min, info.max + 1, 2)]
            node = helper.make_node("QLinearGlobalAveragePool",
                                    ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                                    domain="com.microsoft", channels_last=channels_last)
            op_case(out_root, tmp, f"qop_op_gap_{tag}_{k}", node, [("x", t, shape)],
                    sp("x", 0.04, zx) + sp("y", 0.013, zy), t, {"x": q(shape)})
        # AveragePool (2-D NCHW): padding counted or not, ceil mode.
        for k, (pads, include, ceil) in enumerate([([1, 1, 1, 1], 0, 0), ([0, 1, 1, 0], 1, 1)]):
            zx, zy = [int(v) for v in rng.integers(info.min, info.max + 1, 2)]
            node = helper.make_node("QLinearAveragePool",
                                    ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                                    domain="com.microsoft", kernel_shape=[3, 3], strides=[2, 2],
                                    pads=pads, count_include_pad=include, ceil_mode=ceil)
            op_case(out_root, tmp, f"qop_op_avgpool_{tag}_{k}", node, [("x", t, [1, 3, 9, 8])],
                    sp("x", 0.05, zx) + sp("y", 0.03, zy), t, {"x": q([1, 3, 9, 8])})
        # Concat: one input with the output's parameters (copied), two requantized.
        zy = int(rng.integers(info.min, info.max + 1))
        node = helper.make_node("QLinearConcat", ["y_scale", "y_zp", "x0", "x0_scale", "x0_zp",
                                                  "x1", "x1_scale", "x1_zp", "x2", "x2_scale",
                                                  "x2_zp"], ["y"], domain="com.microsoft", axis=1)
        params = sp("y", 0.05, zy) + sp("x0", 0.05, zy) + sp("x1", 0.02, 3) + sp("x2", 0.11, -3 if tag == "s8" else 200)
        op_case(out_root, tmp, f"qop_op_concat_{tag}", node,
                [("x0", t, [2, 3, 4]), ("x1", t, [2, 5, 4]), ("x2", t, [2, 1, 4])], params, t,
                {"x0": q([2, 3, 4]), "x1": q([2, 5, 4]), "x2": q([2, 1, 4])})
        # Softmax, opset 13 (one axis) and 12 (flattened from the axis).
        for k, (shape, axis, opset) in enumerate([([3, 17], -1, 13), ([2, 5, 6], 1, 13),
                                                  ([2, 3, 4], 1, 12)]):
            node = helper.make_node("QLinearSoftmax", ["x", "x_scale", "x_zp", "y_scale", "y_zp"],
                                    ["y"], domain="com.microsoft", axis=axis, opset=opset)
            # Inputs of a modest range, so no probability reaches 1 (see quantization_microsoft.cc).
            x = rng.integers(info.min // 4 + 64, info.max // 4 + 64, shape).astype(np_type)
            op_case(out_root, tmp, f"qop_op_softmax_{tag}_{k}", node, [("x", t, shape)],
                    sp("x", 0.03, int(rng.integers(info.min, info.max + 1))) +
                    sp("y", 1 / 256, 0 if tag == "u8" else -128), t, {"x": x})
        # Where: X copied (Z's parameters), Y requantized, with broadcasting.
        node = helper.make_node("QLinearWhere", ["cond", "x", "x_scale", "x_zp", "y", "y_scale",
                                                 "y_zp", "z_scale", "z_zp"], ["z"],
                                domain="com.microsoft")
        zz = int(rng.integers(info.min, info.max + 1))
        op_case(out_root, tmp, f"qop_op_where_{tag}", node,
                [("cond", TensorProto.BOOL, [3, 1]), ("x", t, [3, 8]), ("y", t, [8])],
                sp("x", 0.1, zz) + sp("y", 0.037, 5) + sp("z", 0.1, zz), t,
                {"cond": rng.integers(0, 2, [3, 1]).astype(bool), "x": q([3, 8]), "y": q([8])})
        # QGemm: per tensor and per column B, transposes, int32 bias shapes, float output.
        for k, (m, kk, n, ta, tb, per_col, c_shape, float_out) in enumerate([
                (5, 33, 7, 0, 1, False, [7], False), (4, 20, 9, 1, 0, True, [1, 9], False),
                (3, 16, 6, 0, 0, True, [3, 1], False), (6, 8, 5, 0, 1, False, None, True)]):
            a_shape = [kk, m] if ta else [m, kk]
            b_shape = [n, kk] if tb else [kk, n]
            b_type = np.int8 if (tag == "s8" or k % 2) else np.uint8
            b_t = TensorProto.INT8 if b_type == np.int8 else TensorProto.UINT8
            b_info = np.iinfo(b_type)
            b = rng.integers(b_info.min, b_info.max + 1, b_shape).astype(b_type)
            b_scale = (rng.uniform(0.005, 0.03, n) if per_col else np.float32(0.02)).astype(np.float32)
            b_zp = (np.zeros(n, b_type) if per_col else b_type(0 if b_type == np.int8 else 128))
            params = sp("a", 0.03, int(rng.integers(info.min, info.max + 1))) + [
                init("b", b), init("b_scale", b_scale), init("b_zp", b_zp)]
            names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp"]
            if c_shape:
                params.append(init("c", rng.integers(-3000, 3000, c_shape).astype(np.int32)))
                names.append("c")
            else:
                names.append("")
            if not float_out:
                params += sp("y", 0.4, int(rng.integers(info.min, info.max + 1)))
                names += ["y_scale", "y_zp"]
            node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", transA=ta,
                                    transB=tb, alpha=0.75)
            op_case(out_root, tmp, f"qop_op_qgemm_{tag}_{k}", node, [("a", t, a_shape)], params,
                    TensorProto.FLOAT if float_out else t, {"a": q(a_shape)})


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data",
                                                                    "models_int8")
    tmp = tempfile.mkdtemp()
    try:
        model_cases(out_root, tmp)
        op_cases(out_root, tmp)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
