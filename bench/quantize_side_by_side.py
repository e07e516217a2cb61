"""ONNX Runtime's quantization tool and `onnxkit quantize` side by side.

A float model is quantized by ORT's quantize_dynamic / quantize_static (onnxruntime 1.31.1
in .venv: a peer, never a dependency of onnxkit) and by `onnxkit quantize` with the same
options; every file (the float one, ORT's, ours) then runs in both runtimes (ORT, onnxkit)
on the same evaluation inputs. The table gives, per file and runtime: accuracy against
labels (when given) or top-1 agreement with the float model, cosine similarity to the
float model's outputs (in ORT), file size, and median latency at one thread (each file in
ORT, then in `onnxkit bench`, one after the other; the machine is shared, so read ratios
of neighbouring rows, not absolute numbers).

usage (from the repository root):
  .venv/bin/python bench/quantize_side_by_side.py --model M.onnx --eval DIR [--labels L.npy]
      [--calibration DIR] [--modes dynamic,static] [--per-channel] [--op-types Conv MatMul]
      [--dim NAME=V ...] [--runs 5] [--out DIR] [--json FILE]

DIR folders hold one NAME.npy per model input (a whole batch). Without --calibration, static
mode calibrates on --eval's inputs. Without --eval, inputs are generated (--dim fixes dims).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime import quantization as oq


def load_inputs(folder, names):
    return {n: np.load(os.path.join(folder, f"{n}.npy")) for n in names}


def generated_inputs(model, dims, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    initializers = {i.name for i in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        t = value.type.tensor_type
        shape = []
        for k, d in enumerate(t.shape.dim):
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                shape.append(dims.get(d.dim_param, 1 if k == 0 else 128))
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.integer):
            # ids below every vocabulary size; masks of ones; token types 0.
            high = 1 if "type" in value.name else 1000
            feeds[value.name] = (rng.integers(0, high, size=shape)).astype(dtype)
            if "mask" in value.name:
                feeds[value.name][:] = 1
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


class Reader(oq.CalibrationDataReader):
    def __init__(self, batches):
        self.batches = list(batches)

    def get_next(self):
        return self.batches.pop(0) if self.batches else None


def ort_session(path, threads=1):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def onnxkit_run(onnxkit, path, feeds, workdir):
    in_dir = os.path.join(workdir, "in")
    out_dir = os.path.join(workdir, "out")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    args = [onnxkit, "run", path, "--threads", "1", "--output-dir", out_dir]
    for name, value in feeds.items():
        file = os.path.join(in_dir, f"{name}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip())
    return in_dir, out_dir


def onnxkit_latency(onnxkit, path, in_dir, feeds, runs):
    args = [onnxkit, "bench", path, "--threads", "1", "--iterations", str(runs), "--warmup", "1", "--json"]
    for name in feeds:
        args += ["--input", f"{name}={os.path.join(in_dir, name + '.npy')}"]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip())
    report = json.loads(run.stdout)
    return float(report["median_ms"])


def cosine(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--eval")
    parser.add_argument("--labels")
    parser.add_argument("--calibration")
    parser.add_argument("--modes", default="dynamic,static")
    parser.add_argument("--per-channel", action="store_true")
    parser.add_argument("--op-types", nargs="+")
    parser.add_argument("--dim", nargs="*", default=[])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--onnxkit", default="build/onnxkit")
    parser.add_argument("--out")
    parser.add_argument("--json")
    parser.add_argument("--name")
    args = parser.parse_args()

    out = args.out or tempfile.mkdtemp(prefix="quantize_sbs_")
    os.makedirs(out, exist_ok=True)
    name = args.name or os.path.splitext(os.path.basename(args.model))[0]
    model = onnx.load(args.model, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    dims = dict(d.split("=") for d in args.dim)
    dims = {k: int(v) for k, v in dims.items()}
    feeds = load_inputs(args.eval, input_names) if args.eval else generated_inputs(model, dims)
    labels = np.load(args.labels) if args.labels else None
    calibration = load_inputs(args.calibration, input_names) if args.calibration else feeds
    calib_dir = args.calibration
    if calib_dir is None:
        calib_dir = os.path.join(out, "calibration")
        os.makedirs(calib_dir, exist_ok=True)
        for n, v in calibration.items():
            np.save(os.path.join(calib_dir, f"{n}.npy"), v)

    # ORT's own recommended first step; onnxkit simplifies as part of quantize.
    preprocessed = os.path.join(out, f"{name}.ort_pre.onnx")
    try:
        oq.quant_pre_process(args.model, preprocessed, skip_symbolic_shape=True)
    except Exception as error:  # noqa: BLE001 (ORT raises many types)
        print(f"note: ORT's quant_pre_process failed ({error}); ORT quantizes the raw model", file=sys.stderr)
        preprocessed = args.model

    files = {"fp32": args.model}
    for mode in args.modes.split(","):
        ort_file = os.path.join(out, f"{name}.{mode}.ort.onnx")
        ours = os.path.join(out, f"{name}.{mode}.onnxkit.onnx")
        flags = ["--mode", mode]
        if args.per_channel:
            flags.append("--per-channel")
        else:
            flags.append("--no-per-channel")
        if args.op_types:
            flags += ["--op-types", *args.op_types]
        start = time.perf_counter()
        if mode == "dynamic":
            oq.quantize_dynamic(preprocessed, ort_file, weight_type=oq.QuantType.QInt8,
                                per_channel=args.per_channel, op_types_to_quantize=args.op_types)
        else:
            oq.quantize_static(preprocessed, ort_file, Reader([calibration]), quant_format=oq.QuantFormat.QDQ,
                               per_channel=args.per_channel, activation_type=oq.QuantType.QUInt8,
                               weight_type=oq.QuantType.QInt8, op_types_to_quantize=args.op_types,
                               calibrate_method=oq.CalibrationMethod.MinMax)
            flags += ["--calibration-data", calib_dir]
        ort_seconds = time.perf_counter() - start
        start = time.perf_counter()
        run = subprocess.run([args.onnxkit, "quantize", args.model, ours, *flags], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"onnxkit quantize failed: {run.stderr}")
        ours_seconds = time.perf_counter() - start
        print(f"{mode}: quantized by ORT in {ort_seconds:.2f}s, by onnxkit in {ours_seconds:.2f}s", file=sys.stderr)
        files[f"{mode} ORT"] = ort_file
        files[f"{mode} onnxkit"] = ours

    reference = ort_session(args.model).run(None, feeds)
    rows = []
    for label, path in files.items():
        for runtime in ("ORT", "onnxkit"):
            try:
                if runtime == "ORT":
                    session = ort_session(path)
                    outputs = session.run(None, feeds)
                    session.run(None, feeds)
                    times = []
                    for _ in range(args.runs):
                        t0 = time.perf_counter()
                        session.run(None, feeds)
                        times.append((time.perf_counter() - t0) * 1000)
                    latency = statistics.median(times)
                else:
                    work = os.path.join(out, "run")
                    in_dir, out_dir = onnxkit_run(args.onnxkit, path, feeds, work)
                    names = [o.name for o in ort_session(args.model).get_outputs()]
                    outputs = [np.load(os.path.join(out_dir, f"{n}.npy")) for n in names]
                    latency = onnxkit_latency(args.onnxkit, path, in_dir, feeds, args.runs)
            except Exception as error:  # noqa: BLE001
                rows.append({"file": label, "runtime": runtime, "error": str(error)[:200]})
                continue
            row = {"file": label, "runtime": runtime, "bytes": os.path.getsize(path), "latency_ms": latency,
                   "cosine": min(cosine(o, r) for o, r in zip(outputs, reference))}
            first, ref0 = outputs[0], reference[0]
            if labels is not None:
                row["accuracy"] = float((first.argmax(-1) == labels).mean())
            elif first.ndim == 2 and first.shape[1] > 1:
                row["top1_agreement"] = float((first.argmax(-1) == ref0.argmax(-1)).mean())
            rows.append(row)

    print(f"\n{name}: {len(next(iter(feeds.values())))} evaluation rows, latency at 1 thread, median of {args.runs}")
    print("| file | runtime | accuracy / top-1 | cosine to fp32 | size | latency ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        if "error" in row:
            print(f"| {row['file']} | {row['runtime']} | error: {row['error']} | | | |")
            continue
        score = row.get("accuracy", row.get("top1_agreement"))
        score = f"{100 * score:.2f}%" if score is not None else "-"
        print(f"| {row['file']} | {row['runtime']} | {score} | {row['cosine']:.5f} | "
              f"{row['bytes'] / 1e6:.2f} MB | {row['latency_ms']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": name, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
