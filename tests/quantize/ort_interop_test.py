"""onnxkit's quantized files in ONNX Runtime (the peer, from .venv), run by CTest.

For each small test model and each quantization form (dynamic MatMulInteger / ConvInteger,
static QDQ per tensor and per channel, int8 activations, QOperator), `onnxkit quantize`
writes a file that ONNX Runtime must load and run, with outputs close to what `onnxkit run`
computes on the same file, and close to the float model's.

usage: ort_interop_test.py ONNXKIT MODELS_DIR
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

MODELS = ["convnet_bn_tiny", "bert_tiny", "gpt2_tiny", "fpn_dynamic_tiny"]
CONFIGS = [
    ["--mode", "dynamic"],
    ["--mode", "dynamic", "--op-types", "MatMul", "Gemm", "Conv", "--reduce-range"],
    ["--mode", "static"],
    ["--mode", "static", "--per-channel", "--calibration-method", "percentile"],
    ["--mode", "static", "--activation-type", "int8", "--calibration-method", "entropy"],
    ["--mode", "static", "--format", "qoperator", "--per-channel"],
]


def expected_ops(config, float_ops):
    """Quantized ops the file must hold (one of each group), so that a quantizer that quietly
    did nothing fails."""
    if config[1] == "dynamic":
        targets = set(config[config.index("--op-types") + 1 : -1]) if "--op-types" in config else {"MatMul", "Gemm"}
        groups = [{"DynamicQuantizeLinear"}]
        if targets & {"MatMul", "Gemm"} & float_ops:
            groups.append({"MatMulInteger"})
        if "Conv" in targets & float_ops:
            groups.append({"ConvInteger"})
        return groups if len(groups) > 1 else []
    if "qoperator" in config:
        return [{"QLinearConv", "QLinearMatMul"}]
    return [{"QuantizeLinear"}, {"DequantizeLinear"}]


def cosine(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def main():
    onnxkit, models_dir = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            folder = os.path.join(models_dir, name)
            float_model = os.path.join(folder, "model.onnx")
            graph = onnx.load(float_model).graph
            float_ops = {n.op_type for n in graph.node}
            initializers = {i.name for i in graph.initializer}
            inputs = [i.name for i in graph.input if i.name not in initializers]
            files = [os.path.join(folder, "test_data_set_0", f"input_{k}.pb") for k in range(len(inputs))]
            feeds = {n: numpy_helper.to_array(onnx.load_tensor(f)) for n, f in zip(inputs, files)}
            float_outputs = ort.InferenceSession(float_model, providers=["CPUExecutionProvider"]).run(None, feeds)
            for config in CONFIGS:
                label = f"{name} {' '.join(config)}"
                out = os.path.join(tmp, f"{name}_{len(os.listdir(tmp))}.onnx")
                run = subprocess.run([onnxkit, "quantize", float_model, out, *config], capture_output=True, text=True)
                if run.returncode != 0:
                    failures.append(f"{label}: onnxkit quantize failed: {run.stderr.strip()}")
                    continue
                ops = {n.op_type for n in onnx.load(out).graph.node}
                for group in expected_ops(config, float_ops):
                    if group.isdisjoint(ops):
                        failures.append(f"{label}: no {' or '.join(sorted(group))} in the quantized model")
                try:
                    session = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
                    ort_outputs = session.run(None, feeds)
                except Exception as error:  # ORT's own exception types vary by version
                    failures.append(f"{label}: ONNX Runtime cannot run it: {error}")
                    continue
                out_dir = os.path.join(tmp, "outputs")
                os.makedirs(out_dir, exist_ok=True)
                args = [onnxkit, "run", out, "--output-dir", out_dir]
                for n, f in zip(inputs, files):
                    args += ["--input", f"{n}={f}"]
                run = subprocess.run(args, capture_output=True, text=True)
                if run.returncode != 0:
                    failures.append(f"{label}: onnxkit run failed: {run.stderr.strip()}")
                    continue
                for info, theirs, reference in zip(session.get_outputs(), ort_outputs, float_outputs):
                    ours = np.load(os.path.join(out_dir, f"{info.name}.npy"))
                    spread = float(np.ptp(reference)) or 1.0
                    diff = float(np.abs(ours.astype(np.float64) - theirs).max())
                    # Same file, two runtimes: rounding of requantization may differ by a
                    # step here and there, and LayerNorm amplifies a step.
                    if diff > 0.05 * spread or cosine(ours, theirs) < 0.999:
                        failures.append(
                            f"{label}: output {info.name}: onnxkit and ORT differ by {diff:.4g} "
                            f"(range {spread:.4g}, cosine {cosine(ours, theirs):.6f})"
                        )
                    if cosine(ours, reference) < 0.99:
                        failures.append(
                            f"{label}: output {info.name}: cosine to the float model "
                            f"{cosine(ours, reference):.5f} < 0.99"
                        )
                print(f"ok   {label}")
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{len(MODELS) * len(CONFIGS) - len({f.split(':')[0] for f in failures})} passed, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
