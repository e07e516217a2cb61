"""Small int8 models quantized by ONNX Runtime's own tool, with ORT's outputs, for onnxkit's tests.

    /work/main/.venv/bin/python bench/quantize_test_models.py [OUT_DIR]   # default tests/data/models_int8/

From the fp32 models in tests/data/models (PyTorch exports), writes OUT_DIR/NAME/model.onnx and
test_data_set_0/{input,output}_N.pb, the outputs computed by onnxruntime (one thread, no graph
optimization, so ORT's own kernels give the reference). onnxruntime is a test-data maker here,
never a dependency of onnxkit. Kept in their own folder: the fp32 suite's tolerances (1e-3) do
not hold for int8 models, whose tests allow one output quantization step.
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
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
