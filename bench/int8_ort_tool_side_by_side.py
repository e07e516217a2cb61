"""A file quantized by ONNX Runtime's own tool, in onnxkit (the CLI) and in ONNX Runtime, one
thread each, alternating: median latency of each side and their ratio, and the largest
difference between their outputs. A benchmark, never a test.

    .venv/bin/python bench/int8_ort_tool_side_by_side.py ONNXKIT MODEL.onnx [NAME=FILE.npy ...]
        [--rounds N] [--runs N]

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("onnxkit")
    parser.add_argument("model")
    parser.add_argument("inputs", nargs="*")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
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
