"""onnxkit int8 vs onnxkit fp32 vs ONNX Runtime int8, side by side, alternating, one thread.

    /work/main/.venv/bin/python bench/int8_side_by_side.py [--rounds 5] [--iterations 10]
        [--models DIR] [--int8 DIR] [--onnxkit build/onnxkit] [CASE ...]

Cases (int8 files from bench/quantize_bench_models.py in --int8, fp32 in --models):
bert_base_dynamic, gpt2_6l_dynamic, resnet50_qdq, mobilenet_v2_qdq, resnet50_convinteger,
resnet50_qoperator, mobilenet_v2_qoperator, resnet50_qoperator_u8, mobilenet_v2_qoperator_u8,
resnet50_qdq_u8, mobilenet_v2_qdq_u8, and
mobilenet_v2_onnxkit_qdq (`onnxkit quantize --mode static --format qdq --per-channel`).
Per round each of the three runs (in that order, one after the other) reports its median
and fastest latency; the table gives the median over rounds and the ratios, and the fastest
single run of each over all rounds (on a loaded machine the least disturbed one). Then both runtimes run the
int8 file on the same inputs: max |onnxkit - ORT|, relative to the output's range, and in
output quantization steps where the output comes out of a DequantizeLinear; for QDQ files
also against ORT with session.qdqisint8allowed=1. ORT's tool writes int8 (s8) activations;
on x86 ORT's QDQ selectors fuse only u8 ones unless that option is set, after turning those
s8 pairs into u8 that it can (not where a Q feeds two DQs, as at MobileNetV2's and
ResNet-50's residual branches): the rest run as float DQ -> Conv -> Q, whose float
rounding then moves values by a step that deeper layers carry on. With the option, ORT
fuses every conv as onnxkit does.
The machine is shared: timings are noisy, the ratios from one run are what to quote.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {
    "bert_base_dynamic": "bert_base",
    "gpt2_6l_dynamic": "gpt2_6l",
    "resnet50_qdq": "resnet50",
    "mobilenet_v2_qdq": "mobilenet_v2",
    "mobilenet_v2_onnxkit_qdq": "mobilenet_v2",
    "resnet50_convinteger": "resnet50",
    "resnet50_qoperator": "resnet50",
    "mobilenet_v2_qoperator": "mobilenet_v2",
    "resnet50_qoperator_u8": "resnet50",
    "mobilenet_v2_qoperator_u8": "mobilenet_v2",
    "resnet50_qdq_u8": "resnet50",
    "mobilenet_v2_qdq_u8": "mobilenet_v2",
}


def make_inputs(model_path, folder):
    rng = np.random.default_rng(0)
    feeds = {}
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    for i in session.get_inputs():
        if i.type == "tensor(int64)":
            value = (np.ones((1, 128), np.int64) if "mask" in i.name
                     else rng.integers(0, 1000, (1, 128), dtype=np.int64))
        else:
            value = rng.normal(0, 1, (1, 3, 224, 224)).astype(np.float32)
        feeds[i.name] = value
    paths = []
    for name, value in feeds.items():
        path = os.path.join(folder, f"{name}.npy")
        np.save(path, value)
        paths.append(f"{name}={path}")
    return feeds, paths


def onnxkit_median(exe, model, inputs, iterations):
    args = [exe, "bench", model, "--threads", "1", "--iterations", str(iterations), "--json"]
    for i in inputs:
        args += ["--input", i]
    out = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return out["median_ms"], out["min_ms"]


ORT_TIMER = r"""
import sys, time, json, numpy as np, onnxruntime as ort
model, iterations = sys.argv[1], int(sys.argv[2])
feeds = {a.split('=')[0]: np.load(a.split('=', 1)[1]) for a in sys.argv[3:]}
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=['CPUExecutionProvider'])
for _ in range(3): s.run(None, feeds)
t = []
for _ in range(iterations):
    a = time.perf_counter(); s.run(None, feeds); t.append((time.perf_counter() - a) * 1e3)
t.sort(); print(json.dumps([t[len(t) // 2], t[0]]))
"""


def ort_median(model, inputs, iterations):
    out = subprocess.run([sys.executable, "-c", ORT_TIMER, model, str(iterations), *inputs],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def output_steps(model_path):
    """Graph output name -> scale of the DequantizeLinear that produces it (if any)."""
    model = onnx.load(model_path, load_external_data=False)
    inits = {t.name: t for t in model.graph.initializer}
    steps = {}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[1] in inits:
            for o in model.graph.output:
                if o.name == node.output[0]:
                    steps[o.name] = float(onnx.numpy_helper.to_array(inits[node.input[1]]).max())
    return steps


def accuracy(exe, model, feeds, inputs, folder, int8_allowed=False):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    if int8_allowed:
        o.add_session_config_entry("session.qdqisint8allowed", "1")
    session = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    names = [x.name for x in session.get_outputs()]
    expected = dict(zip(names, session.run(None, feeds)))
    out_dir = os.path.join(folder, "out")
    args = [exe, "run", model, "--threads", "1", "--output-dir", out_dir]
    for i in inputs:
        args += ["--input", i]
    subprocess.run(args, check=True, capture_output=True, text=True)
    steps = output_steps(model)
    lines = []
    for name in names:
        got = np.load(os.path.join(out_dir, f"{name.replace('/', '_')}.npy"))
        want = expected[name]
        diff = float(np.abs(got.astype(np.float64) - want).max())
        span = float(want.max() - want.min()) or 1.0
        step = f", {diff / steps[name]:.2f} steps" if name in steps else ""
        lines.append(f"{name}: max |diff| {diff:.3g} ({100 * diff / span:.3f}% of range{step})")
    return "; ".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cases", nargs="*")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--models", default=os.path.join(ROOT, "bench", "models"))
    p.add_argument("--int8")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    a = p.parse_args()
    int8_dir = a.int8 or os.path.join(a.models, "int8")
    for case in a.cases or CASES:
        int8 = os.path.join(int8_dir, f"{case}.onnx")
        fp32 = os.path.join(a.models, f"{CASES[case]}.onnx")
        with tempfile.TemporaryDirectory() as folder:
            feeds, inputs = make_inputs(int8, folder)
            times = {"onnxkit int8": [], "onnxkit fp32": [], "ORT int8": []}
            fastest = {k: [] for k in times}
            for _ in range(a.rounds):
                for key, run in (("onnxkit int8", lambda: onnxkit_median(a.onnxkit, int8, inputs, a.iterations)),
                                 ("onnxkit fp32", lambda: onnxkit_median(a.onnxkit, fp32, inputs, a.iterations)),
                                 ("ORT int8", lambda: ort_median(int8, inputs, a.iterations))):
                    median, least = run()
                    times[key].append(median)
                    fastest[key].append(least)
            med = {k: statistics.median(v) for k, v in times.items()}
            # On a loaded machine a run's median mostly measures the wait for a core; the
            # fastest single run (over all rounds) is the least disturbed one.
            best = {k: min(v) for k, v in fastest.items()}
            print(f"{case}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in med.items()) +
                  f" | fp32/int8 {med['onnxkit fp32'] / med['onnxkit int8']:.2f}x"
                  f" | onnxkit/ORT on the int8 file {med['onnxkit int8'] / med['ORT int8']:.2f}",
                  flush=True)
            print(f"  fastest run: " + ", ".join(f"{k} {v:.2f} ms" for k, v in best.items()) +
                  f" | fp32/int8 {best['onnxkit fp32'] / best['onnxkit int8']:.2f}x"
                  f" | onnxkit/ORT {best['onnxkit int8'] / best['ORT int8']:.2f}", flush=True)
            print(f"  rounds: {json.dumps({k: [round(x, 1) for x in v] for k, v in times.items()})}")
            print("  vs ORT: " + accuracy(a.onnxkit, int8, feeds, inputs, folder), flush=True)
            if case.endswith("_qdq"):
                print("  vs ORT, int8 QDQ allowed: " +
                      accuracy(a.onnxkit, int8, feeds, inputs, folder, int8_allowed=True),
                      flush=True)


if __name__ == "__main__":
    main()
