#!/usr/bin/env python3
"""The model set in float16: each model converted with onnxconverter-common (as users make
fp16 models), simplified by `onnxkit simplify` with default options, run by onnxkit and by
ONNX Runtime on the same inputs, and timed side by side at one thread.

    scripts/setup_venv.sh scripts/requirements-test.txt bench/requirements-ort.txt \\
        bench/requirements-fp16.txt
    .venv/bin/python bench/fp16_models.py [--model-dir DIR] [--models a,b] [--repeats 3]

ONNX Runtime and onnxconverter-common (pinned in bench/requirements-*.txt) are peers and
test-data makers here, never dependencies of onnxkit. Both runtimes compute 16-bit nodes in
float32 on this CPU; ORT rounds every node's output back to float16 (its casts sit around
each node), onnxkit only at the edges of each float16 region. The table gives, per model:
nodes before/after simplify, simplify seconds, the error of onnxkit's run of the simplified
model against ORT on the original (max |a - b| / (|b| + mean |b|)), the same error of ORT
against the float32 original (what float16 itself costs), and the median latency of each
runtime (runs alternate between them, --repeats rounds of --iterations runs) with the ratio
onnxkit / ORT.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnxconverter_common import float16

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from modern_opsets import DEFAULT_MODELS, file_stem, log, make_inputs, relative_error  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def convert(source, target):
    """fp32 -> fp16 as users do it, with the converter's two known slips undone."""
    model = onnx.load(source)
    # Stale value_info types mislead the converter's own shape pass.
    del model.graph.value_info[:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the float32 number ... will be truncated"
        fp16 = float16.convert_float_to_float16(model, keep_io_types=False)
    # It leaves Cast(to=float) inside the graph while typing the output float16 (BERT's mask,
    # GPT-2's attention): such a model does not load in ORT.
    outputs = {o.name for o in fp16.graph.output}
    for node in fp16.graph.node:
        if node.op_type != "Cast" or node.output[0] in outputs:
            continue
        for attribute in node.attribute:
            if attribute.name == "to" and attribute.i == onnx.TensorProto.FLOAT:
                attribute.i = onnx.TensorProto.FLOAT16
    onnx.save(fp16, target)


def ort_session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def ort_median_ms(session, inputs, iterations):
    session.run(None, inputs)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def one(args, name, work):
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    source = os.path.join(args.model_dir, name + ".onnx")
    path = os.path.join(folder, "fp16.onnx")
    convert(source, path)
    model = onnx.load(path, load_external_data=False)
    inputs = make_inputs(name, model, args.batch, args.seq, args.seed)
    del model
    session = ort_session(path, args.threads)
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, inputs)))
    float32 = ort_session(source, args.threads)
    wide_inputs = {k: v.astype(np.float32) if v.dtype == np.float16 else v
                   for k, v in inputs.items()}
    truth = dict(zip([o.name for o in float32.get_outputs()], float32.run(None, wide_inputs)))
    del float32
    fp16_cost = max(relative_error(truth[n], expected[n]) for n in expected if n in truth)

    simplified = os.path.join(folder, "simplified.onnx")
    start = time.perf_counter()
    done = subprocess.run([args.onnxkit, "simplify", "--json", path, simplified],
                          capture_output=True, text=True, timeout=args.timeout)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"simplify failed: {done.stderr.strip() or done.stdout.strip()}")
    report = json.loads(done.stdout)
    kept_fp16 = onnx.load(simplified, load_external_data=False).graph.output[0].type. \
        tensor_type.elem_type == onnx.TensorProto.FLOAT16

    flags = []
    for input_name, value in inputs.items():
        file = os.path.join(folder, "in_" + file_stem(input_name) + ".npy")
        np.save(file, value)
        flags += ["--input", f"{input_name}={file}"]
    out_dir = os.path.join(folder, "onnxkit_out")
    done = subprocess.run([args.onnxkit, "run", simplified, "--threads", str(args.threads),
                           *flags, "--output-dir", out_dir],
                          capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        raise RuntimeError(f"run failed: {done.stderr.strip() or done.stdout.strip()}")
    error = 0.0
    for output_name, value in expected.items():
        file = os.path.join(out_dir, file_stem(output_name) + ".npy")
        error = max(error, relative_error(value, np.load(file)) if os.path.exists(file)
                    else float("inf"))

    onnxkit_ms, ort_ms = [], []
    for _ in range(args.repeats):
        done = subprocess.run([args.onnxkit, "bench", simplified, "--threads", str(args.threads),
                               "--iterations", str(args.iterations), "--json", *flags],
                              capture_output=True, text=True, timeout=args.timeout)
        if done.returncode != 0:
            raise RuntimeError(f"bench failed: {done.stderr.strip() or done.stdout.strip()}")
        onnxkit_ms.append(json.loads(done.stdout)["median_ms"])
        ort_ms.append(ort_median_ms(session, inputs, args.iterations))
    return {"model": name, "before": report["before"]["nodes"],
            "after": report["after"]["nodes"], "seconds": seconds, "error": error,
            "fp16_cost": fp16_cost, "kept_fp16": kept_fp16,
            "onnxkit_ms": float(np.median(onnxkit_ms)), "ort_ms": float(np.median(ort_ms))}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", default=os.path.join(HERE, "models"))
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800, help="seconds per onnxkit command")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--keep", help="keep the converted and simplified models in this folder")
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: one model, its row as JSON
    args = p.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="fp16_models_")
    if args.one:
        print(json.dumps(one(args, args.one, work)))
        return 0
    rows = []
    for name in [n for n in args.models.split(",") if n]:
        log(f"{name}")
        # Each model in its own process: ORT 1.31 crashes on some fp16 models (ViT: SIGSEGV
        # at session creation), which must be a row of the table, not the end of the run.
        command = [sys.executable, os.path.abspath(__file__), "--one", name] + \
            [a for a in sys.argv[1:] if not a.startswith("--one")]
        if not args.keep:
            command += ["--keep", os.path.join(work, "work")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        else:
            reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
            if done.returncode < 0:
                reason = f"the process died of signal {-done.returncode} {reason}"
            rows.append({"model": name, "failed": reason[:300]})
        subprocess.run(["rm", "-rf", os.path.join(work, "work", name)])
    print("| model | nodes before | nodes after | simplify s | stays fp16 | onnxkit vs ORT "
          "| ORT fp16 vs fp32 | onnxkit ms | ORT ms | ratio |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if "failed" in r:
            print(f"| {r['model']} | | | | | | | | | FAILED: {r['failed']} |")
            continue
        print(f"| {r['model']} | {r['before']} | {r['after']} | {r['seconds']:.2f} "
              f"| {'yes' if r['kept_fp16'] else 'NO'} | {r['error']:.2e} | {r['fp16_cost']:.2e} "
              f"| {r['onnxkit_ms']:.1f} | {r['ort_ms']:.1f} "
              f"| {r['onnxkit_ms'] / r['ort_ms']:.2f} |")
    return 0 if all("failed" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
