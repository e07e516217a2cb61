#!/usr/bin/python3
"""onnxkit against ONNX Runtime, side by side: latency, session creation, peak memory, and
whether the two compute the same outputs.

    /usr/bin/python3 bench/compare_runtime.py [--model-dir DIR] [--models a,b] [--threads 1,2]
        [--rounds K] [--iterations N] [--warmup W] [--level L] [--ort-level L] [--out FILE.md]

For each model (DIR/NAME.onnx) and each thread count, one set of inputs is generated and saved
as .npy (batch 1, sequence 128 for text models, token ids in the vocabulary's range, attention
masks of ones, images normal(0,1)); then `onnxkit bench --json` and `node bench/ort_bench.js
--json` run on the same model file with the same inputs and thread count, each in its own
process (so peak RSS is per runtime), alternating for K rounds of N timed runs (who goes first
alternates too). The ratio is onnxkit/ORT median latency, taken per round and then the median
of those ratios: below 1 means onnxkit is faster. Outputs are checked once per model: one
`onnxkit run --output-dir` and one ORT run, max |a - b| / (|b| + mean|b|) over every output.

Prints a markdown table (and writes it to --out). Exits 1 if any model failed in either runtime.
Needs numpy, node, and onnxruntime-node in bench/node_modules (scripts/install_model_tools.sh).
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The full-size set of bench/export_models.py, and the vocabulary of its text models (token
# ids are drawn below it; other integer inputs get [0, 10) unless named *mask*).
DEFAULT_MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_s16_6l",
                  "bert_base", "gpt2_6l", "yolo_csp"]
VOCAB = {"bert_base": 30522, "gpt2_6l": 50257}

NUMPY_DTYPES = {"float": np.float32, "double": np.float64, "float16": np.float16,
                "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
                "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
                "bool": np.bool_}


def log(message):
    print(message, file=sys.stderr, flush=True)


class Failed(Exception):
    pass


def run(command, timeout):
    """Runs a command; returns its stdout, or raises Failed with the tail of its stderr."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failed(f"timed out after {timeout} s: {' '.join(command[:2])}")
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["?"]
        raise Failed(f"{os.path.basename(command[0])} exited {done.returncode}: {tail[0]}")
    return done.stdout


def run_json(command, timeout):
    text = run(command, timeout)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise Failed(f"{os.path.basename(command[0])} printed no JSON ({e})")


def file_stem(name):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name)


def make_inputs(args, name, model_path, folder):
    """Generates the model's inputs as folder/NAME.npy; returns {input name: path}."""
    info = run_json([args.onnxkit, "inspect", "--json", model_path], args.timeout)
    rng = np.random.default_rng(args.seed)
    files = {}
    for spec in info["inputs"]:
        if spec.get("dtype") not in NUMPY_DTYPES or spec.get("shape") is None:
            raise Failed(f"input '{spec['name']}' is a {spec['type']}: cannot generate it")
        shape = []
        for i, dim in enumerate(spec["shape"]):
            if isinstance(dim, int):
                shape.append(dim)
            elif i == 0:
                shape.append(args.batch)  # 'batch', or an unnamed leading dim
            elif dim == "seq" or dim is None:
                shape.append(args.seq)
            else:
                raise Failed(f"input '{spec['name']}' dim {i} is '{dim}': no value known for it")
        dtype = NUMPY_DTYPES[spec["dtype"]]
        if np.issubdtype(dtype, np.floating):
            data = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_ or "mask" in spec["name"].lower():
            data = np.ones(shape, dtype)
        else:
            data = rng.integers(0, VOCAB.get(name, 10), size=shape).astype(dtype)
        path = os.path.join(folder, file_stem(spec["name"]) + ".npy")
        np.save(path, data)
        files[spec["name"]] = path
    return files


def input_flags(files):
    return [f for name, path in files.items() for f in ("--input", f"{name}={path}")]


def onnxkit_bench(args, model, files, threads):
    return run_json([args.onnxkit, "bench", model, "--json", "--threads", str(threads),
                     "--level", args.level, "--iterations", str(args.iterations),
                     "--warmup", str(args.warmup)] + input_flags(files), args.timeout)


def ort_bench(args, model, files, threads, output_dir=None, iterations=None, warmup=None):
    command = [args.node, os.path.join(HERE, "ort_bench.js"), model, "--json",
               "--threads", str(threads), "--level", args.ort_level,
               "--iterations", str(iterations or args.iterations),
               "--warmup", str(args.warmup if warmup is None else warmup)] + input_flags(files)
    if output_dir:
        command += ["--output-dir", output_dir]
    return run_json(command, args.timeout)


def max_relative_error(args, model, files, folder):
    """Runs each runtime once on the inputs; the worst |a - b| / (|b| + mean|b|) over the
    outputs, b being ORT's."""
    ours, theirs = os.path.join(folder, "onnxkit_out"), os.path.join(folder, "ort_out")
    run([args.onnxkit, "run", model, "--level", args.level, "--output-dir", ours]
        + input_flags(files), args.timeout)
    ort_bench(args, model, files, 1, output_dir=theirs, iterations=1, warmup=0)
    worst = 0.0
    names = sorted(f for f in os.listdir(theirs) if f.endswith(".npy"))
    if not names:
        raise Failed("ORT wrote no outputs")
    for file in names:
        b = np.load(os.path.join(theirs, file))
        path = os.path.join(ours, file)
        if not os.path.exists(path):
            raise Failed(f"onnxkit wrote no {file}")
        a = np.load(path)
        if a.shape != b.shape:
            raise Failed(f"{file}: onnxkit shape {list(a.shape)}, ORT {list(b.shape)}")
        a, b = a.astype(np.float64), b.astype(np.float64)
        if b.size == 0:
            continue
        scale = np.abs(b) + np.abs(b).mean()
        error = np.abs(a - b) / np.where(scale > 0, scale, 1.0)
        worst = max(worst, float(np.nanmax(np.where(np.isnan(a) != np.isnan(b), np.inf, error))))
    return worst


def compare(args, name, threads, model, files):
    """K rounds, alternating the runtimes (and who goes first); medians over rounds."""
    rounds = []
    for k in range(args.rounds):
        order = [("onnxkit", onnxkit_bench), ("ort", ort_bench)]
        if k % 2 == 1:
            order.reverse()
        result = {}
        for runtime, bench in order:
            result[runtime] = bench(args, model, files, threads)
        log(f"  {name} threads {threads} round {k + 1}/{args.rounds}: onnxkit "
            f"{result['onnxkit']['median_ms']:.2f} ms, ORT {result['ort']['median_ms']:.2f} ms")
        rounds.append(result)

    def median(runtime, field):
        return statistics.median(r[runtime][field] for r in rounds)

    return {
        "onnxkit_ms": median("onnxkit", "median_ms"),
        "ort_ms": median("ort", "median_ms"),
        "ratio": statistics.median(r["onnxkit"]["median_ms"] / r["ort"]["median_ms"]
                                   for r in rounds),
        "ratios": [r["onnxkit"]["median_ms"] / r["ort"]["median_ms"] for r in rounds],
        "onnxkit_create_ms": median("onnxkit", "session_create_ms"),
        "ort_create_ms": median("ort", "session_create_ms"),
        "onnxkit_rss_mb": median("onnxkit", "peak_rss_mb"),
        "ort_rss_mb": median("ort", "peak_rss_mb"),
        "nodes": rounds[0]["onnxkit"].get("nodes"),
    }


def describe_machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    return f"{cpu}, {os.cpu_count()} cores visible; onnxkit {commit or '?'}"


def table(args, rows):
    lines = [
        f"onnxkit (level {args.level}) vs ONNX Runtime (level {args.ort_level}): "
        f"{args.rounds} round(s) x {args.iterations} runs after {args.warmup} warmup; "
        f"{datetime.date.today()}; {describe_machine()}",
        "",
        "| model | threads | onnxkit ms | ORT ms | onnxkit/ORT | create ms onnxkit | "
        "create ms ORT | RSS MB onnxkit | RSS MB ORT | max rel err |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        error = row.get("error")
        check = row.get("check", "")
        if error:
            lines.append(f"| {row['model']} | {row['threads']} | failed: {error} | | | | | | | "
                         f"{check} |")
            continue
        lines.append(
            f"| {row['model']} | {row['threads']} | {row['onnxkit_ms']:.2f} | {row['ort_ms']:.2f} | "
            f"{row['ratio']:.2f} | {row['onnxkit_create_ms']:.0f} | {row['ort_create_ms']:.0f} | "
            f"{row['onnxkit_rss_mb']:.0f} | {row['ort_rss_mb']:.0f} | {check} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-dir", default=os.path.join(HERE, "models"),
                   help="where NAME.onnx lives (default bench/models)")
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated names")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--rounds", type=int, default=3, help="alternations per model and threads")
    p.add_argument("--iterations", type=int, default=20, help="timed runs per round")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs after the first one")
    p.add_argument("--level", default="all", help="onnxkit --level")
    p.add_argument("--ort-level", default="all", help="ORT graph optimization level")
    p.add_argument("--seq", type=int, default=128, help="sequence length of text models")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-check", action="store_true", help="skip the output comparison")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--node", default=shutil.which("node") or "node")
    p.add_argument("--out", help="also write the table (markdown) here")
    p.add_argument("--json-out", help="write every number measured as JSON here")
    args = p.parse_args()
    if args.rounds < 1 or args.iterations < 1 or args.warmup < 0:
        p.error("--rounds and --iterations must be >= 1, --warmup >= 0")
    try:
        thread_counts = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        p.error(f"--threads: '{args.threads}' is not a list of numbers")
    if not os.access(args.onnxkit, os.X_OK):
        p.error(f"no onnxkit binary at {args.onnxkit} (build it, or pass --onnxkit)")

    rows, failed = [], False
    for name in [m for m in args.models.split(",") if m]:
        model = os.path.join(args.model_dir, name + ".onnx")
        if not os.path.exists(model):
            log(f"{name}: no {model}, skipped")
            rows.append({"model": name, "threads": "-", "error": f"no {model}"})
            failed = True
            continue
        with tempfile.TemporaryDirectory(prefix=f"compare_{name}_") as folder:
            check = "-"
            try:
                files = make_inputs(args, name, model, folder)
                if not args.no_check:
                    log(f"{name}: checking outputs")
                    check = f"{max_relative_error(args, model, files, folder):.1e}"
            except Failed as e:
                log(f"{name}: {e}")
                rows.append({"model": name, "threads": "-", "error": str(e)})
                failed = True
                continue
            for threads in thread_counts:
                row = {"model": name, "threads": threads, "check": check}
                try:
                    row.update(compare(args, name, threads, model, files))
                except Failed as e:
                    log(f"{name} threads {threads}: {e}")
                    row["error"] = str(e)
                    failed = True
                rows.append(row)
    text = table(args, rows)
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
