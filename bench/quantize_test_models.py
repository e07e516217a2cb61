"""Small int8 models quantized by ONNX Runtime's own tool, with ORT's outputs, for onnxkit's tests.

    /work/main/.venv/bin/python bench/quantize_test_models.py [OUT_DIR]   # default tests/data/models_int8/

From the fp32 models in tests/data/models (PyTorch exports), writes OUT_DIR/NAME/model.onnx and
test_data_set_0/{input,output}_N.pb, the outputs computed by onnxruntime (one thread, no graph
optimization, so ORT's own kernels give the reference). onnxruntime is a test-data maker here,
never a dependency of onnxkit. Kept in their own folder: the fp32 suite's tolerances (1e-3) do
not hold for int8 models, whose tests allow one output quantization step.

Also writes OUT_DIR/../models_int8_ort_all/mobilenet_tiny_static_qdq_per_channel: a small
MobileNetV2-like net (ReLU6 stem, inverted residual blocks with depthwise convs and residual
Adds, a stride-2 block, global pooling, Gemm; made here with random weights) quantized by
quantize_static (QDQ, per channel), its outputs from ORT with all optimizations (its fused
QLinearConv / QLinearAdd / QLinearGlobalAveragePool / QGemm kernels), which onnxkit's fused
int8 kernels must match within one output quantization step (the step is printed).
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FP32 = os.path.join(ROOT, "tests", "data", "models")


def read_inputs(name):
    folder = os.path.join(FP32, name, "test_data_set_0")
    model = onnx.load(os.path.join(FP32, name, "model.onnx"))
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {}
    for i, input_name in enumerate(names):
        t = onnx.TensorProto()
        with open(os.path.join(folder, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[input_name] = numpy_helper.to_array(t)
    return names, feeds


class Reader(CalibrationDataReader):
    """A few inputs like the stored one: the stored one itself and random perturbations."""

    def __init__(self, feeds, count=4):
        rng = np.random.default_rng(0)
        self.batches = [feeds]
        for _ in range(count - 1):
            batch = {}
            for k, v in feeds.items():
                if v.dtype.kind == "f":
                    batch[k] = (v + rng.normal(0, 0.3, v.shape)).astype(v.dtype)
                else:
                    batch[k] = v
            self.batches.append(batch)
        self.it = iter(self.batches)

    def get_next(self):
        return next(self.it, None)


def write_case(model_path, names, feeds, out_dir):
    os.makedirs(os.path.join(out_dir, "test_data_set_0"), exist_ok=True)
    shutil.copy(model_path, os.path.join(out_dir, "model.onnx"))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    folder = os.path.join(out_dir, "test_data_set_0")
    for i, n in enumerate(names):
        t = numpy_helper.from_array(feeds[n], n)
        open(os.path.join(folder, f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, (o, v) in enumerate(zip(session.get_outputs(), outputs)):
        t = numpy_helper.from_array(v, o.name)
        open(os.path.join(folder, f"output_{i}.pb"), "wb").write(t.SerializeToString())
    ops = sorted({n.op_type for n in onnx.load(model_path).graph.node})
    print(f"{os.path.basename(out_dir)}: {os.path.getsize(model_path)} bytes, ops {ops}")


def mobilenet_tiny(path, rng):
    """A MobileNetV2-like float model: stem conv 3->16 s2 + ReLU6, inverted residual blocks
    (1x1 expand x6 + ReLU6, depthwise 3x3 + ReLU6, 1x1 project, residual Add), a stride-2
    block 16->32, global average pooling, Flatten, Gemm to 10 classes. Weights are random,
    scaled so activations stay O(1)."""
    from onnx import TensorProto, helper
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv(x, c_in, c_out, k, stride, group, relu6, name):
        fan_in = c_in // group * k * k
        w = rng.normal(0, np.sqrt(2.0 / fan_in), (c_out, c_in // group, k, k))
        b = rng.normal(0, 0.1, c_out)
        y = f"{name}_out"
        nodes.append(helper.make_node("Conv", [x, const(f"{name}_w", w), const(f"{name}_b", b)], [y],
                                      name=name, kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4, group=group))
        if relu6:
            nodes.append(helper.make_node("Clip", [y, const(f"{name}_lo", np.array(0.0)),
                                                   const(f"{name}_hi", np.array(6.0))],
                                          [f"{name}_relu6"], name=f"{name}_clip"))
            y = f"{name}_relu6"
        return y

    def block(x, c_in, c_out, stride, name):
        hidden = c_in * 6
        h = conv(x, c_in, hidden, 1, 1, 1, True, f"{name}_expand")
        h = conv(h, hidden, hidden, 3, stride, hidden, True, f"{name}_dw")
        h = conv(h, hidden, c_out, 1, 1, 1, False, f"{name}_project")
        if stride == 1 and c_in == c_out:
            nodes.append(helper.make_node("Add", [x, h], [f"{name}_add"], name=f"{name}_add"))
            h = f"{name}_add"
        return h

    x = conv("input", 3, 16, 3, 2, 1, True, "stem")
    x = block(x, 16, 16, 1, "block1")
    x = block(x, 16, 16, 1, "block2")
    x = block(x, 16, 32, 2, "block3")
    x = block(x, 32, 32, 1, "block4")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["flat", const("fc_w", rng.normal(0, 0.25, (10, 32))),
                                           const("fc_b", rng.normal(0, 0.1, 10))], ["logits"],
                                  name="fc", transB=1))
    graph = helper.make_graph(nodes, "mobilenet_tiny",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_ort_all_case(model_path, feed_sets, out_dir):
    """As write_case, one test_data_set per feeds, with ORT's outputs at ORT_ENABLE_ALL (its
    fused int8 kernels)."""
    shutil.copy(model_path, os.path.join(out_dir, "model.onnx"))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    for k, feeds in enumerate(feed_sets):
        folder = os.path.join(out_dir, f"test_data_set_{k}")
        os.makedirs(folder, exist_ok=True)
        for i, (n, v) in enumerate(feeds.items()):
            open(os.path.join(folder, f"input_{i}.pb"), "wb").write(
                numpy_helper.from_array(v, n).SerializeToString())
        for i, (o, v) in enumerate(zip(session.get_outputs(), session.run(None, feeds))):
            open(os.path.join(folder, f"output_{i}.pb"), "wb").write(
                numpy_helper.from_array(v, o.name).SerializeToString())
    model = onnx.load(model_path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {n.output[0]: n for n in model.graph.node}
    step = float(inits[producer[model.graph.output[0].name].input[1]])
    print(f"{os.path.basename(out_dir)}: {os.path.getsize(model_path)} bytes, output step {step!r}")


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data",
                                                                    "models_int8")
    tmp = tempfile.mkdtemp()
    try:
        cases = []
        for name in ["convnet_bn_tiny", "bert_tiny", "gpt2_tiny"]:
            pre = os.path.join(tmp, f"{name}_pre.onnx")
            quant_pre_process(os.path.join(FP32, name, "model.onnx"), pre, skip_symbolic_shape=True)
            cases.append((name, pre))
        for name, pre in cases:
            names, feeds = read_inputs(name)
            variants = []
            if name == "convnet_bn_tiny":
                variants += [
                    ("dynamic_convinteger", dict(kind="dynamic", op_types_to_quantize=["Conv", "MatMul", "Gemm"])),
                    ("dynamic_convinteger_uint8", dict(kind="dynamic", op_types_to_quantize=["Conv", "MatMul", "Gemm"], weight_type=QuantType.QUInt8)),
                    ("static_qdq", dict(kind="static", quant_format=QuantFormat.QDQ)),
                    ("static_qdq_per_channel", dict(kind="static", quant_format=QuantFormat.QDQ, per_channel=True)),
                    # Conv and MatMul only (QLinearConv alone); the com.microsoft ops of QOperator
                    # (QGemm, QLinearAdd, ...) have their own cases: quantize_qoperator_models.py.
                    ("static_qoperator", dict(kind="static", quant_format=QuantFormat.QOperator, op_types_to_quantize=["Conv", "MatMul"])),
                    ("static_qdq_s8s8", dict(kind="static", quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, per_channel=True)),
                ]
            else:
                variants += [
                    ("dynamic", dict(kind="dynamic")),
                    ("dynamic_per_channel", dict(kind="dynamic", per_channel=True)),
                    ("dynamic_uint8", dict(kind="dynamic", weight_type=QuantType.QUInt8)),
                ]
                if name == "bert_tiny":
                    variants += [("static_qdq", dict(kind="static", quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul", "Gemm"]))]
            for suffix, options in variants:
                out = os.path.join(tmp, f"{name}_{suffix}.onnx")
                kind = options.pop("kind")
                if kind == "dynamic":
                    options.setdefault("weight_type", QuantType.QInt8)
                    quantize_dynamic(pre, out, **options)
                else:
                    quantize_static(pre, out, Reader(feeds), **options)
                write_case(out, names, feeds, os.path.join(out_root, f"{name}_{suffix}"))
        rng = np.random.default_rng(28)
        fp32 = os.path.join(tmp, "mobilenet_tiny.onnx")
        mobilenet_tiny(fp32, rng)
        feed_sets = [{"input": rng.normal(0, 1, (1, 3, 32, 32)).astype(np.float32)}
                     for _ in range(8)]
        out = os.path.join(tmp, "mobilenet_tiny_static_qdq_per_channel.onnx")
        quantize_static(fp32, out, Reader(feed_sets[0]), quant_format=QuantFormat.QDQ,
                        per_channel=True)
        write_ort_all_case(out, feed_sets, os.path.join(os.path.dirname(out_root.rstrip("/")),
                                                    "models_int8_ort_all",
                                                    "mobilenet_tiny_static_qdq_per_channel"))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
