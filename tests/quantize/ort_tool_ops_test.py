"""Files written by ONNX Runtime's own quantization tool (the peer in .venv) run in onnxkit
and match ONNX Runtime, run by CTest.

Small float models built with onnx.helper (one family of ops each, and LSTM / GRU) are
quantized by ORT's quantize_dynamic and quantize_static (QOperator and QDQ) in each option
combination that changes what the tool writes. Each file must hold the op the combination is
meant to emit (so a tool that stops emitting it fails here), load in onnxkit, and give ORT's
outputs (ORT at one thread, ORT_ENABLE_ALL). Each dynamic file with a MatMul is also saved as
ORT's optimizer rewrites it (com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat), and
that file must run too:
- static files: within one step of the output's quantization (the scale of the
  DequantizeLinear that makes it; integer outputs within 1). QDQ files against ORT with its
  graph optimizations off, i.e. the file's ONNX meaning: ORT's own levels disagree on them
  (on the cnn model ORT_DISABLE_ALL and ORT_ENABLE_ALL differ by 2 steps: at level all it
  fuses some groups into int8 kernels and runs others as float DQ -> op -> Q);
- dynamic files (float outputs): within 1e-4 of the output's range. The integer products are
  exact on both sides; what differs is float rounding (the order of the scale products and
  bias adds, 1 ulp each), and in an LSTM such an ulp can move the next step's dynamically
  quantized activation by one step (measured: ORT and onnxkit agree to 3e-7 on these files).
A broken DynamicQuantizeLSTM (scale shape, missing input, per-column s8 zero point) must fail
with an error naming the node and the input.

--survey prints, for every file, the ops it holds and whether onnxkit runs it, and fails on
nothing (the inventory of bench/README.md).

usage: ort_tool_ops_test.py ONNXKIT [--survey]
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

OPSET = 17
RNG = np.random.default_rng(7)


def weight(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def make_model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=f"{op}_{outputs[0]}", **attrs)


# Each model: (name, builder) -> (model, {input: shape}).
def cnn():
    inits = {"w1": weight(8, 3, 3, 3), "b1": weight(8), "w2": weight(8, 8, 3, 3), "b2": weight(8),
             "w3": weight(8, 8, 1, 1), "fc": weight(10, 16), "fcb": weight(10),
             "shape": np.array([1, -1], np.int64), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        node("Clip", ["c2"], ["r2"]),
        node("Conv", ["p1", "w3"], ["c3"]),
        node("Add", ["r2", "c3"], ["a1"]),
        node("Concat", ["a1", "p1"], ["cat"], axis=1),
        node("AveragePool", ["cat"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Pad", ["ap", "pads"], ["pad"]),
        node("GlobalAveragePool", ["pad"], ["gap"]),
        node("Reshape", ["gap", "shape"], ["flat"]),
        node("Gemm", ["flat", "fc", "fcb"], ["logits"], transB=1),
    ]
    return make_model(nodes, [("x", [1, 3, 16, 16])], ["logits"], inits), {"x": [1, 3, 16, 16]}


def elementwise():
    inits = {"w": weight(16, 16), "m": weight(1, 16), "scales": np.array([1, 1, 2, 2], np.float32),
             "axes": np.array([0], np.int64), "idx": np.array([[0, 2], [1, 3]], np.int64),
             "split": np.array([8, 8], np.int64)}
    nodes = [
        node("MatMul", ["x", "w"], ["mm"]),
        node("Mul", ["mm", "m"], ["mul"]),
        node("Sigmoid", ["mul"], ["sg"]),
        node("LeakyRelu", ["mm"], ["lr"], alpha=0.1),
        node("Add", ["sg", "lr"], ["sum"]),
        # (Where is left out: ORT 1.31's tool fails on QLinearWhere with quantized branches.)
        node("Add", ["sum", "mm"], ["wh"]),
        node("Softmax", ["wh"], ["sm"], axis=-1),
        node("Split", ["wh", "split"], ["s0", "s1"], axis=1),
        node("Transpose", ["s0"], ["tr"], perm=[1, 0]),
        node("Unsqueeze", ["tr", "axes"], ["us"]),
        node("Squeeze", ["us", "axes"], ["sq"]),
        node("Gather", ["sq", "idx"], ["ga"], axis=0),
        node("ArgMax", ["s1"], ["am"], axis=1, keepdims=1),
        node("Cast", ["am"], ["amf"], to=TensorProto.FLOAT),
        node("Unsqueeze", ["wh", "axes"], ["wh4"]),
        node("Unsqueeze", ["wh4", "axes"], ["wh44"]),
        node("Resize", ["wh44", "", "scales"], ["rs"], mode="nearest"),
    ]
    outputs = ["sm", "ga", "amf", "rs"]
    return make_model(nodes, [("x", [4, 16])], outputs, inits), {"x": [4, 16]}


def recurrent(op, direction, initial_states, peephole=False, hidden=24, lengths=None, **attrs):
    def build():
        dirs = 2 if direction == "bidirectional" else 1
        inp, seq, batch = 12, 7, 3
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        inits = {"W": weight(dirs, gates * hidden, inp), "R": weight(dirs, gates * hidden, hidden),
                 "B": weight(dirs, 2 * gates * hidden, scale=0.1)}
        # Inputs by position: X, W, R, B, sequence_lens, initial_h, initial_c, P.
        ins = ["x", "W", "R", "B", "", "", "", ""]
        graph_inputs = [("x", [seq, batch, inp])]
        fixed = {}
        if lengths is not None:
            ins[4] = "lens"
            fixed["lens"] = np.array(lengths, np.int32)
        if initial_states:
            ins[5] = "h0"
            graph_inputs.append(("h0", [dirs, batch, hidden]))
            if op == "LSTM":
                ins[6] = "c0"
                graph_inputs.append(("c0", [dirs, batch, hidden]))
        if peephole:
            ins[7] = "P"
            inits["P"] = weight(dirs, 3 * hidden, scale=0.1)
        while ins[-1] == "":
            ins.pop()
        outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
        nodes = [node(op, ins, outs, hidden_size=hidden, direction=direction, **attrs)]
        # A MatMul after it, so the file also holds the dynamic MatMul pattern.
        inits["proj"] = weight(hidden, 5)
        nodes.append(node("MatMul", ["Y_h", "proj"], ["out"]))
        model = make_model(nodes, graph_inputs, ["Y", "out"] + outs[2:], inits)
        if fixed:
            model.graph.input.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
        return model, {**dict(graph_inputs), **fixed}
    return build


def shared_input():
    # Two MatMuls on one input: one DynamicQuantizeLinear feeds both products, which ORT's
    # optimizer turns into com.microsoft MatMulIntegerToFloat (per-column b_scale with
    # per_channel, and a bias from the Add).
    inits = {"w1": weight(16, 8), "w2": weight(16, 8), "b1": weight(8)}
    nodes = [node("MatMul", ["x", "w1"], ["m1"]), node("Add", ["m1", "b1"], ["y1"]),
             node("MatMul", ["x", "w2"], ["y2"])]
    return make_model(nodes, [("x", [2, 5, 16])], ["y1", "y2"], inits), {"x": [2, 5, 16]}


MODELS = {
    "cnn": cnn,
    "shared_input": shared_input,
    "elementwise": elementwise,
    "lstm": recurrent("LSTM", "forward", False),
    "lstm_bidirectional_states": recurrent("LSTM", "bidirectional", True),
    # hidden 21: the recurrent product's K is no multiple of 4, nor 4 * hidden of 16.
    "lstm_reverse_peephole": recurrent("LSTM", "reverse", True, peephole=True, hidden=21),
    # sequence_lens: ORT starts every reversed sequence at step 0, and a finished entry enters
    # the next product's quantization once with its last state, then as zeros.
    "lstm_lengths": recurrent("LSTM", "forward", False, lengths=[7, 2, 4]),
    "lstm_bidirectional_lengths": recurrent("LSTM", "bidirectional", False, lengths=[3, 7, 0]),
    "gru": recurrent("GRU", "forward", True),
    # PyTorch's GRU export (linear_before_reset), and an RNN: ORT's tool leaves both float.
    "gru_linear_before_reset": recurrent("GRU", "bidirectional", True, lengths=[7, 3, 5], linear_before_reset=1),
    "rnn": recurrent("RNN", "reverse", True),
}

# (label, models, function, kwargs, ops the file must hold: (domain, op_type) of each group, any one)
DYNAMIC = [
    ("dynamic", {}, [{("com.microsoft", "DynamicQuantizeLSTM"), ("", "MatMulInteger")}]),
    ("dynamic per_channel", {"per_channel": True}, [{("com.microsoft", "DynamicQuantizeLSTM"), ("", "MatMulInteger")}]),
    ("dynamic uint8 weights", {"weight_type": QuantType.QUInt8}, [{("com.microsoft", "DynamicQuantizeLSTM"), ("", "MatMulInteger")}]),
    ("dynamic reduce_range", {"reduce_range": True, "per_channel": True}, [{("com.microsoft", "DynamicQuantizeLSTM"), ("", "MatMulInteger")}]),
    ("dynamic conv", {"op_types_to_quantize": ["Conv", "MatMul", "Gemm", "LSTM"]}, [{("", "ConvInteger"), ("", "MatMulInteger")}]),
    ("dynamic asymmetric weights", {"extra_options": {"WeightSymmetric": False}}, [{("", "MatMulInteger")}]),
]
STATIC = [
    ("qoperator u8s8", {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QUInt8}, [{("", "QLinearConv"), ("", "QLinearMatMul")}]),
    ("qoperator u8s8 per_channel", {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QUInt8, "per_channel": True}, [{("", "QLinearConv"), ("", "QLinearMatMul")}]),
    ("qoperator s8s8", {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QInt8}, [{("", "QLinearConv"), ("", "QLinearMatMul")}]),
    ("qoperator u8u8 reduce_range", {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QUInt8, "weight_type": QuantType.QUInt8, "reduce_range": True}, [{("", "QLinearConv"), ("", "QLinearMatMul")}]),
    ("qoperator symmetric activations", {"quant_format": QuantFormat.QOperator, "activation_type": QuantType.QInt8, "extra_options": {"ActivationSymmetric": True}}, [{("", "QLinearConv"), ("", "QLinearMatMul")}]),
    ("qdq u8s8", {"activation_type": QuantType.QUInt8}, [{("", "QuantizeLinear")}]),
    ("qdq per_channel s8s8", {"per_channel": True, "activation_type": QuantType.QInt8}, [{("", "QuantizeLinear")}]),
    ("qdq u16 activations", {"activation_type": QuantType.QUInt16}, [{("com.microsoft", "QuantizeLinear"), ("", "QuantizeLinear")}]),
    ("qdq contrib ops", {"activation_type": QuantType.QUInt8, "extra_options": {"UseQDQContribOps": True}}, [{("com.microsoft", "QuantizeLinear")}]),
    ("qdq keep activations", {"extra_options": {"QDQKeepRemovableActivations": True}}, [{("", "QuantizeLinear")}]),
]


class Reader(CalibrationDataReader):
    def __init__(self, shapes, count=8):
        rng = np.random.default_rng(11)
        self.batches = iter([{k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def ops_of(model):
    return {(n.domain if n.domain != "ai.onnx" else "", n.op_type) for n in model.graph.node}


def output_steps(model):
    """Per graph output: the scale of the DequantizeLinear making it (None: no such step)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    steps = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[1] in inits:
            steps[n.output[0]] = float(np.max(inits[n.input[1]]))
    return steps


def run_ort(path, feeds, unfused=False):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # ORT's DynamicQuantizeLSTM quantizes per thread's block
    if unfused:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [o.name for o in session.get_outputs()], session.run(None, feeds)


def run_onnxkit(onnxkit, path, feeds, folder, extra=(), env=None):
    args = [onnxkit, "run", path, "--quiet", "--output-dir", folder, *extra]
    for name, value in feeds.items():
        file = os.path.join(folder, f"in_{name}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    run = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return run.returncode, run.stderr.strip()


def bad_input_failures(onnxkit, tmp):
    """A broken DynamicQuantizeLSTM must fail with an error naming the node and the input."""
    model, shapes = MODELS["lstm"]()
    path = os.path.join(tmp, "bad_lstm.onnx")
    onnx.save(model, path)
    quantize_dynamic(path, path + ".q")
    feeds = {k: np.zeros(v, np.float32) for k, v in shapes.items()}
    failures = []

    def broken(edit, expected, label):
        m = onnx.load(path + ".q")
        lstm = next(n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM")
        edit(m, lstm)
        bad = os.path.join(tmp, "bad.onnx")
        onnx.save(m, bad)
        for kernels in ["optimized", "reference"]:
            code, error = run_onnxkit(onnxkit, bad, feeds, os.path.join(tmp, "out"), ["--kernels", kernels])
            if code == 0 or lstm.name not in error or expected not in error:
                failures.append(f"bad input ({label}, {kernels}): expected an error naming "
                                f"{lstm.name} and '{expected}', got code {code}: {error}")

    def wrong_scale_shape(m, lstm):
        scale = next(i for i in m.graph.initializer if i.name == lstm.input[8])
        scale.CopyFrom(numpy_helper.from_array(np.ones((1, 3), np.float32), scale.name))

    def missing_zero_point(m, lstm):
        del lstm.input[11:]

    def per_column_s8_zero_point(m, lstm):
        zp = next(i for i in m.graph.initializer if i.name == lstm.input[9])
        hidden4 = next(i for i in m.graph.initializer if i.name == lstm.input[1]).dims[2]
        values = np.zeros((1, hidden4), np.int8)
        values[0, 5] = 3
        zp.CopyFrom(numpy_helper.from_array(values, zp.name))
        scale = next(i for i in m.graph.initializer if i.name == lstm.input[8])
        scale.CopyFrom(numpy_helper.from_array(np.full((1, hidden4), 0.01, np.float32), scale.name))

    broken(wrong_scale_shape, "W_scale has shape [1,3]", "scale shape")
    broken(missing_zero_point, "R_zero_point", "missing input")
    broken(per_column_s8_zero_point, "W_zero_point holds 3", "per-column s8 zero point")
    return failures


def check_file(onnxkit, path, feeds, tmp, name, static, unfused):
    """Runs `path` in ORT and onnxkit; returns (the ops it holds, failures, a summary)."""
    model = onnx.load(path)
    ops = ops_of(model)
    folder = os.path.join(tmp, "out")
    os.makedirs(folder, exist_ok=True)
    names, theirs = run_ort(path, feeds, unfused=unfused)
    code, error = run_onnxkit(onnxkit, path, feeds, folder)
    if code != 0:
        return ops, [f"{name}: onnxkit run failed: {error}"], ""
    failures, worst = [], []
    steps = output_steps(model)
    for output, value in zip(names, theirs):
        ours = np.load(os.path.join(folder, f"{output}.npy"))
        diff = float(np.abs(ours.astype(np.float64) - value).max()) if value.size else 0.0
        if static and output in steps:
            limit = steps[output] * 1.001
        elif value.dtype.kind in "iu":
            limit = 1
        else:
            limit = 1e-4 * max(float(np.ptp(value)), 1e-3)
        worst.append(f"{output} {diff:.3g}/{limit:.3g}")
        if diff > limit:
            failures.append(f"{name}: output {output} differs from ORT by {diff:.4g} (limit {limit:.4g})")
    # The reference kernels of the com.microsoft int8 ops with float outputs and of the float
    # LSTM, and their fast ones below VNNI (split weights, AVX2 loops): ORT's outputs too.
    checked_twice = {("com.microsoft", op) for op in ["DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"]}
    if ops & (checked_twice | {("", "LSTM"), ("", "GRU"), ("", "RNN")}):
        for extra, env in [(["--kernels", "reference"], {}),
                           ([], {"DNNL_MAX_CPU_ISA": "AVX2", "ONNXKIT_SIMD_LEVEL": "avx2"})]:
            other = os.path.join(tmp, "other")
            os.makedirs(other, exist_ok=True)
            code, error = run_onnxkit(onnxkit, path, feeds, other, extra, env)
            if code != 0:
                failures.append(f"{name} {extra} {env}: onnxkit run failed: {error}")
                continue
            for output, value in zip(names, theirs):
                ours = np.load(os.path.join(other, f"{output}.npy"))
                diff = float(np.abs(ours.astype(np.float64) - value).max())
                if diff > 1e-4 * max(float(np.ptp(value)), 1e-3):
                    failures.append(f"{name} {extra} {env}: output {output} differs from ORT by {diff:.4g}")
    return ops, failures, ", ".join(worst)


def ort_optimized(path):
    """The file ORT's optimizer makes of `path` (level extended, saved as ORT saves it):
    dynamic MatMul chains become com.microsoft DynamicQuantizeMatMul / MatMulIntegerToFloat."""
    out = path.replace(".onnx", "_ort_optimized.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = out
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return out


def main():
    onnxkit = sys.argv[1]
    survey = "--survey" in sys.argv
    failures, passed, inventory = [], 0, {}
    with tempfile.TemporaryDirectory() as tmp:
        for model_name, build in MODELS.items():
            model, shapes = build()
            float_path = os.path.join(tmp, f"{model_name}.onnx")
            onnx.save(model, float_path)
            feeds = {k: v if isinstance(v, np.ndarray) else RNG.standard_normal(v).astype(np.float32)
                     for k, v in shapes.items()}
            dynamic_only = model_name.startswith(("lstm", "gru", "rnn", "shared"))
            configs = [(label, quantize_dynamic, kw, ex) for label, kw, ex in DYNAMIC]
            if model_name.startswith(("lstm", "gru", "rnn")):
                # The float model itself, on the recurrent ops' optimized kernel (the same cell
                # as DynamicQuantizeLSTM's, with sgemm products and SIMD gates).
                ops, file_failures, summary = check_file(
                    onnxkit, float_path, feeds, tmp, f"{model_name} float", False, False)
                failures += file_failures
                passed += 1
                if not file_failures:
                    print(f"ok   {model_name} float: {summary}")
            if not dynamic_only:
                configs += [(label, quantize_static, kw, ex) for label, kw, ex in STATIC]
            for label, quantize, kwargs, expected in configs:
                name = f"{model_name} {label}"
                out = os.path.join(tmp, f"{model_name}_{len(os.listdir(tmp))}.onnx")
                if quantize is quantize_static:
                    quantize(float_path, out, Reader(shapes), **kwargs)
                else:
                    quantize(float_path, out, **kwargs)
                files = [(name, out, expected)]
                if quantize is quantize_dynamic and any(n.op_type == "MatMul" for n in model.graph.node):
                    optimized_ops = {("com.microsoft", "DynamicQuantizeMatMul"), ("com.microsoft", "MatMulIntegerToFloat")}
                    if model_name.startswith("shared"):  # one DynamicQuantizeLinear, two products
                        optimized_ops = {("com.microsoft", "MatMulIntegerToFloat")}
                    files.append((f"{name}, ORT-optimized", ort_optimized(out), [optimized_ops]))
                for file_name, path, wanted in files:
                    ops, file_failures, summary = check_file(
                        onnxkit, path, feeds, tmp, file_name, quantize is quantize_static, "qdq" in label)
                    if not any(not group.isdisjoint(ops) for group in wanted):
                        file_failures.append(f"{file_name}: the file holds none of {sorted(set().union(*wanted))}")
                    for op in ops:
                        inventory.setdefault(op, set()).add(("fails" if file_failures else "ok") + f" ({label})")
                    failures += file_failures
                    passed += 1
                    if not file_failures:
                        print(f"ok   {file_name}: {summary}")
        failures += bad_input_failures(onnxkit, tmp)
    if survey:
        for (domain, op), results in sorted(inventory.items()):
            print(f"{domain or 'ai.onnx'}::{op}: {'; '.join(sorted(results))}")
        return 0
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{passed} files ran, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
