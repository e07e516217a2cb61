#!/usr/bin/env python3
"""The model set at modern opsets: each model converted to opset 18 and 21 with onnx 1.23's
version converter, simplified by `onnxkit simplify` with default options, and the simplified
model's outputs compared with ONNX Runtime's on the converted (unsimplified) model.

    scripts/setup_venv.sh scripts/requirements-test.txt bench/requirements-ort.txt
    .venv/bin/python bench/modern_opsets.py [--model-dir DIR] [--models a,b] [--opsets 18,21]

ONNX Runtime (PyPI onnxruntime, pinned in bench/requirements-ort.txt) is a peer tool here,
never a dependency of onnxkit. Inputs: floats normal(0, 1), token ids in range of the
vocabulary, masks of ones; batch 1, seq 128. The error of an output is
max |onnxkit - ORT| / (|ORT| + mean |ORT|) over its elements (a relative error that does not
blow up where ORT's value crosses zero); ok when every output's is under --rtol. Prints a
markdown table: model, opset, nodes before/after, simplify seconds, max relative error, ok.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_MODELS = ["mobilenet_v2", "resnet50", "efficientnet_b0", "convnext_tiny", "yolo_csp",
                  "vit_s16_6l", "bert_base", "gpt2_6l"]
VOCAB = {"bert_base": 30522, "gpt2_6l": 50257}


def log(message):
    print(message, file=sys.stderr, flush=True)


def make_inputs(name, model, batch, seq, seed):
    rng = np.random.default_rng(seed)
    inputs = {}
    initializers = {i.name for i in model.graph.initializer}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        tensor = info.type.tensor_type
        shape = []
        for i, dim in enumerate(tensor.shape.dim):
            if dim.HasField("dim_value"):
                shape.append(dim.dim_value)
            elif i == 0:
                shape.append(batch)
            else:
                shape.append(seq)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.floating):
            inputs[info.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_ or "mask" in info.name.lower():
            inputs[info.name] = np.ones(shape, dtype)
        else:
            inputs[info.name] = rng.integers(0, VOCAB.get(name, 10), size=shape).astype(dtype)
    return inputs


def file_stem(name):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name)


def relative_error(expected, actual):
    expected = expected.astype(np.float64)
    actual = actual.astype(np.float64)
    if expected.shape != actual.shape:
        return float("inf")
    if expected.size == 0:
        return 0.0
    scale = np.abs(expected) + np.abs(expected).mean() + 1e-12
    return float((np.abs(expected - actual) / scale).max())


def one(args, name, opset, work):
    source = os.path.join(args.model_dir, name + ".onnx")
    folder = os.path.join(work, f"{name}_{opset}")
    os.makedirs(folder, exist_ok=True)
    model = onnx.load(source)
    converted = version_converter.convert_version(model, opset)
    converted_path = os.path.join(folder, "model.onnx")
    onnx.save(converted, converted_path)
    del model

    inputs = make_inputs(name, converted, args.batch, args.seq, args.seed)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(converted_path, options, providers=["CPUExecutionProvider"])
    output_names = [o.name for o in session.get_outputs()]
    expected = dict(zip(output_names, session.run(None, inputs)))
    del session, converted

    simplified = os.path.join(folder, "simplified.onnx")
    start = time.perf_counter()
    done = subprocess.run([args.onnxkit, "simplify", "--json", converted_path, simplified],
                          capture_output=True, text=True, timeout=args.timeout)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"simplify failed: {done.stderr.strip() or done.stdout.strip()}")
    report = json.loads(done.stdout)

    input_flags = []
    for input_name, value in inputs.items():
        path = os.path.join(folder, "in_" + file_stem(input_name) + ".npy")
        np.save(path, value)
        input_flags += ["--input", f"{input_name}={path}"]
    out_dir = os.path.join(folder, "onnxkit_out")
    done = subprocess.run([args.onnxkit, "run", simplified, *input_flags, "--output-dir", out_dir],
                          capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        raise RuntimeError(f"run failed: {done.stderr.strip() or done.stdout.strip()}")
    error = 0.0
    for output_name, value in expected.items():
        path = os.path.join(out_dir, file_stem(output_name) + ".npy")
        error = max(error, relative_error(value, np.load(path)) if os.path.exists(path)
                    else float("inf"))
    return {"model": name, "opset": opset, "before": report["before"]["nodes"],
            "after": report["after"]["nodes"], "seconds": seconds, "error": error,
            "ok": error <= args.rtol, "notes": report.get("notes", []),
            "warnings": report.get("warnings", [])}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", default=os.path.join(HERE, "models"))
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names")
    p.add_argument("--opsets", default="18,21", help="comma-separated target opsets")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="ORT intra-op threads")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per onnxkit command")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--keep", help="keep the converted and simplified models in this folder")
    args = p.parse_args()
    names = [n for n in args.models.split(",") if n]
    missing = [n for n in names if not os.path.exists(os.path.join(args.model_dir, n + ".onnx"))]
    if missing:
        sys.exit(f"modern_opsets: no {', '.join(missing)} in {args.model_dir} "
                 "(bench/export_models.py writes them)")
    rows = []
    work = args.keep or tempfile.mkdtemp(prefix="modern_opsets_")
    for name in names:
        for opset in [int(o) for o in args.opsets.split(",")]:
            log(f"{name} at opset {opset}")
            try:
                rows.append(one(args, name, opset, work))
            except Exception as e:  # a failure is a row of the table, not the end of the run
                rows.append({"model": name, "opset": opset, "failed": str(e).splitlines()[0]})
            if not args.keep:
                subprocess.run(["rm", "-rf", os.path.join(work, f"{name}_{opset}")])
    print("| model | opset | nodes before | nodes after | simplify s | max rel err | ok |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        if "failed" in r:
            print(f"| {r['model']} | {r['opset']} | | | | | FAILED: {r['failed']} |")
            continue
        print(f"| {r['model']} | {r['opset']} | {r['before']} | {r['after']} | {r['seconds']:.2f} "
              f"| {r['error']:.2e} | {'yes' if r['ok'] else 'NO'} |")
    notes = sorted({n for r in rows for n in r.get("notes", []) + r.get("warnings", [])})
    for note in notes:
        print(f"\nnote: {note}")
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
