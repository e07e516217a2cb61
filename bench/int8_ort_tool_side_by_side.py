"""A file quantized by ONNX Runtime's own tool, in onnxkit (the CLI) and in ONNX Runtime, one
thread each, alternating: median latency of each side and their ratio, and the largest
difference between their outputs. A benchmark, never a test.

    .venv/bin/python bench/int8_ort_tool_side_by_side.py ONNXKIT MODEL.onnx [NAME=FILE.npy ...]
        [--rounds N] [--runs N]
    .venv/bin/python bench/int8_ort_tool_side_by_side.py ONNXKIT lstm:SEQ:INPUT:HIDDEN

`lstm:SEQ:INPUT:HIDDEN` builds a one-layer LSTM (batch 1, random weights, seed 0) with
onnx.helper, quantizes it with ORT's quantize_dynamic (default options: DynamicQuantizeLSTM,
int8 weights per tensor) and times that file on random inputs.

Each round times --runs runs of `onnxkit bench --threads 1` and as many ORT runs
(intra_op_num_threads 1), the side going first alternating; the figure is the median of the
rounds' medians. ORT runs at one thread because its DynamicQuantizeLSTM quantizes each
thread's block of batch rows on its own, so its outputs change with its thread count.
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
import json

import numpy as np
import onnxruntime as ort


def make_lstm(spec, folder):
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import quantize_dynamic

    seq, inp, hidden = (int(v) for v in spec.split(":")[1:])
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in [("W", (1, 4 * hidden, inp)), ("R", (1, 4 * hidden, hidden)), ("B", (1, 8 * hidden))]]
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=hidden)
    graph = helper.make_graph([node], "lstm", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, 1, inp])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["Y", "Y_h", "Y_c"]],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    import onnx

    fp32 = os.path.join(folder, f"lstm_{seq}_{inp}_{hidden}.onnx")
    onnx.save(model, fp32)
    int8 = fp32.replace(".onnx", "_int8.onnx")
    quantize_dynamic(fp32, int8)
    x = os.path.join(folder, "X.npy")
    np.save(x, rng.standard_normal((seq, 1, inp)).astype(np.float32))
    return int8, [f"X={x}"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxkit")
    parser.add_argument("model")
    parser.add_argument("inputs", nargs="*")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory()
    if args.model.startswith("lstm:"):
        args.model, args.inputs = make_lstm(args.model, scratch.name)
    feeds = {a.split("=")[0]: np.load(a.split("=", 1)[1]) for a in args.inputs}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    peer = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    input_flags = [f"--input={a}" for a in args.inputs]

    def onnxkit_median():
        run = subprocess.run([args.onnxkit, "bench", args.model, "--threads", "1", "--json", "--quiet",
                              "--iterations", str(args.runs), *input_flags],
                             capture_output=True, text=True, check=True)
        return json.loads(run.stdout)["median_ms"]

    def ort_median():
        for _ in range(3):
            peer.run(None, feeds)
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            peer.run(None, feeds)
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)

    medians = {"onnxkit": [], "ort": []}
    for r in range(args.rounds):
        sides = [("onnxkit", onnxkit_median), ("ort", ort_median)]
        for name, measure in sides if r % 2 == 0 else reversed(sides):
            medians[name].append(measure())
    ours, theirs = statistics.median(medians["onnxkit"]), statistics.median(medians["ort"])

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.onnxkit, "run", args.model, "--quiet", "--output-dir", tmp, *input_flags],
                       capture_output=True, check=True)
        diffs = []
        for info, value in zip(peer.get_outputs(), peer.run(None, feeds)):
            mine = np.load(os.path.join(tmp, f"{info.name}.npy"))
            diffs.append(f"{info.name} {float(np.abs(mine.astype(np.float64) - value).max()):.3g}")
    print(f"{os.path.basename(args.model)}: onnxkit {ours:.3f} ms, ORT {theirs:.3f} ms, "
          f"onnxkit/ORT {ours / theirs:.2f}; max |onnxkit - ORT|: {', '.join(diffs)}")


if __name__ == "__main__":
    main()
