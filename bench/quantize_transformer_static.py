"""Static int8 transformers: `onnxkit quantize --mode static` and ONNX Runtime's
quantize_static with the same options and the same calibration samples, cosine to fp32.

    /work/main/.venv/bin/python bench/quantize_transformer_static.py MODEL.onnx
        [--onnxkit build/onnxkit] [--sets default,percentile,...] [--ort] [--samples 8]
        [--eval 4] [--seq 128] [--pad 0] [--out DIR] [--extra "--op-types ..."]

Calibration samples (seed 1..) and evaluation samples (seed 1000..) are token ids below
30,000 with a mask of ones (zeros on the last --pad tokens), batch 1, sequence --seq.
Every file (fp32, ours, ORT's after its quant_pre_process) runs in ONNX Runtime at one
thread, so the cosine compares the files, not the runtimes; it is over all outputs'
elements of all evaluation samples. --extra passes more flags to `onnxkit quantize` (e.g.
"--op-types MatMul Gemm" for a sensitivity run).
onnxruntime is the peer here, never a dependency of onnxkit.
"""
import argparse
import os
import shlex
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# option set -> (onnxkit flags, ORT quantize_static keyword arguments)
SETS = {
    "default": ([], {}),
    "per-channel": (["--per-channel"], {"per_channel": True}),
    "entropy": (["--calibration-method", "entropy"], {"calibrate_method": "Entropy"}),
    "percentile": (["--calibration-method", "percentile"], {"calibrate_method": "Percentile"}),
    "qoperator": (["--format", "qoperator"], {"quant_format": "QOperator"}),
    "per-channel+percentile": (["--per-channel", "--calibration-method", "percentile"],
                               {"per_channel": True, "calibrate_method": "Percentile"}),
}


def inputs(model, seed, seq, pad=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [1, seq]
        if "mask" in value.name:
            feeds[value.name] = np.ones(shape, np.int64)
            feeds[value.name][:, seq - pad:] = 0
        else:
            feeds[value.name] = rng.integers(0, 30000 if "input_ids" in value.name else 2,
                                             size=shape).astype(np.int64)
    return feeds


def session(path, threads=1):
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def outputs_ort(path, samples):
    s = session(path)
    return [np.concatenate([r.ravel() for r in s.run(None, f)]) for f in samples]


def cosine(a, b):
    a = np.concatenate(a).astype(np.float64)
    b = np.concatenate(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--sets", default="default")
    p.add_argument("--ort", action="store_true", help="also ORT's quantize_static")
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--eval", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--pad", type=int, default=0, help="mask out the last PAD tokens")
    p.add_argument("--out", default="/tmp/quantize_transformer_static")
    p.add_argument("--extra", default="", help="more onnxkit quantize flags")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model = onnx.load(a.model, load_external_data=False)
    name = os.path.splitext(os.path.basename(a.model))[0]
    calib = [inputs(model, 1 + i, a.seq, a.pad) for i in range(a.samples)]
    evals = [inputs(model, 1000 + i, a.seq, a.pad) for i in range(a.eval)]
    calib_dir = os.path.join(a.out, f"{name}_calib")
    for i, feeds in enumerate(calib):
        d = os.path.join(calib_dir, f"sample_{i}")
        os.makedirs(d, exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(d, f"{k}.npy"), v)
    reference = outputs_ort(a.model, evals)
    print(f"| model | option set | onnxkit cosine | ORT cosine |", flush=True)
    for set_name in a.sets.split(","):
        flags, kwargs = SETS[set_name]
        ours = os.path.join(a.out, f"{name}_{set_name}_onnxkit.onnx")
        t = time.time()
        r = subprocess.run([a.onnxkit, "quantize", a.model, ours, "--mode", "static",
                            "--calibration-data", calib_dir,
                            "--calibration-samples", str(a.samples)] + flags +
                           shlex.split(a.extra), capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        t_ours = time.time() - t
        ours_cos = cosine(reference, outputs_ort(ours, evals))
        theirs_cos = float("nan")
        t_theirs = 0
        if a.ort:
            from onnxruntime import quantization as oq

            class Reader(oq.CalibrationDataReader):
                def __init__(self):
                    self.left = list(calib)

                def get_next(self):
                    return self.left.pop(0) if self.left else None

            pre = os.path.join(a.out, f"{name}_pre.onnx")
            if not os.path.exists(pre):
                oq.quant_pre_process(a.model, pre, skip_symbolic_shape=True)
            theirs = os.path.join(a.out, f"{name}_{set_name}_ort.onnx")
            kw = dict(kwargs)
            if "calibrate_method" in kw:
                kw["calibrate_method"] = getattr(oq.CalibrationMethod, kw["calibrate_method"])
            if "quant_format" in kw:
                kw["quant_format"] = getattr(oq.QuantFormat, kw["quant_format"])
            t = time.time()
            oq.quantize_static(pre, theirs, Reader(), **kw)
            t_theirs = time.time() - t
            theirs_cos = cosine(reference, outputs_ort(theirs, evals))
        print(f"| {name} | {set_name} {a.extra} | {ours_cos:.5f} | {theirs_cos:.5f} | "
              f"(quantize {t_ours:.0f} s / ORT {t_theirs:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
