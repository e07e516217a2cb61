#!/usr/bin/env python3
"""onnxkit simplify beside onnxsim and onnxslim, in one run: nodes after, wall time, peak RSS
and whether the simplified model still computes what the original does.

    .venv/bin/python bench/peer_simplifiers.py [MODEL.onnx | DIR]... [--out FILE.md]
        [--onnxkit build/onnxkit] [--timeout S] [--keep DIR]

Default models: the full-size set (bench/models/*.onnx) and the real-model suite
(bench/real_models/openwakeword/*.onnx and the package models of
bench/real_models/packages/*.onnx, fetched by bench/fetch_real_models.sh).

Every tool runs with its default options (and onnxkit once more with its check forced,
--check-n 1: its default, --check-n auto, checks only where both runs are estimated cheap,
and onnxsim's CLI checks nothing unless given check_n), in its own process (so peak RSS, from /usr/bin/time,
is that tool's alone), one model at a time; the order of the three tools rotates
from model to model. Wall time includes each tool's start-up (Python imports for the peers).
Nodes are counted with the nodes of If/Loop/Scan bodies. "matches" runs ONNX Runtime (the
.venv's onnxruntime, one thread) on the original and on each result with the same generated
inputs (first dim 1, audio lengths 512, other dims 128; floats normal(0,1); token ids below
1000, masks of ones, a scalar `sr` 16000; a package model gets the inputs of
bench/package_models.py) and takes max |a - b| / (|a| + max(mean|a|, 0.1)) over
every output; a result matches within 1e-4.

Needs the peers in .venv: scripts/setup_venv.sh scripts/requirements-test.txt
bench/requirements-ort.txt bench/requirements-peers.txt (peers, never dependencies).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

import package_models  # beside this file, on sys.path when run as a script or imported

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOLERANCE = 1e-4
ATOL = 1e-5


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                n += count_nodes(a.g)
            for g in a.graphs:
                n += count_nodes(g)
    return n


def model_nodes(path):
    return count_nodes(onnx.load(path, load_external_data=False).graph)


def timed(command, timeout):
    """Runs a command under /usr/bin/time (whose own small process forks it, so the peak RSS
    is the tool's alone, not this process's inherited one); returns (wall s, CPU s, peak RSS
    in MB, return code, stderr tail, stdout)."""
    # The previous tool's output (440 MB for BERT) is still dirty in the page cache: unflushed,
    # its writeback throttles this tool's own writes (a BERT simplify measured 1.0-1.4 s after
    # five earlier outputs, 0.45 s after a sync).
    os.sync()
    with tempfile.NamedTemporaryFile("r") as stats, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        try:
            code = subprocess.run(["/usr/bin/time", "-o", stats.name, "-f", "%M %U %S"] + command,
                                  stdout=out, stderr=err, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = -9
        seconds = time.perf_counter() - start
        out.seek(0)
        stdout = out.read().decode(errors="replace")
        fields = (stats.read().strip().splitlines() or ["0 0 0"])[-1].split()
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
        tail = [l for l in lines if not l.startswith("Command exited")][-1:] or [""]
    try:
        rss_kb, user, system = float(fields[0]), float(fields[1]), float(fields[2])
    except (ValueError, IndexError):
        rss_kb = user = system = 0.0
    return seconds, user + system, rss_kb / 1024.0, code, tail[0][:160], stdout


def tools(onnxkit):
    python = sys.executable
    return {
        # onnxsim's CLI checks nothing unless given check_n; onnxkit's default (--check-n
        # auto) checks once where both runs are estimated cheap, and once more forced.
        "onnxkit": lambda i, o: [onnxkit, "simplify", i, o],
        "onnxkit --check-n 1": lambda i, o: [onnxkit, "simplify", "--check-n", "1", i, o],
        "onnxsim": lambda i, o: [python, "-m", "onnxsim", i, o],
        "onnxslim": lambda i, o: [python, "-m", "onnxslim", i, o],
    }


def dim_size(dim, axis, symbols):
    """One size per symbol across all inputs: batch-like (or first) 1, audio 512, else 128."""
    if dim.dim_value > 0:
        return dim.dim_value
    name = dim.dim_param.lower()
    if name and name in symbols:
        return symbols[name]
    if axis == 0 or "batch" in name:
        size = 1
    elif "sampl" in name or name == "sequence":
        size = 512
    else:
        size = 128
    if name:
        symbols[name] = size
    return size


def make_inputs(path, seed=0):
    feeds = package_models.make_inputs(path, seed)
    if feeds is not None:
        return feeds
    rng = np.random.default_rng(seed)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    model = onnx.load(path, load_external_data=False)
    declared = {v.name: v for v in model.graph.input}
    feeds = {}
    symbols = {}
    for meta in session.get_inputs():
        dims = declared[meta.name].type.tensor_type.shape.dim
        if any("batch" in d.dim_param.lower() for d in dims):
            symbols.update({d.dim_param.lower(): 1 for d in dims if "batch" in d.dim_param.lower()})
        shape = [dim_size(d, axis, symbols) for axis, d in enumerate(dims)]
        name = meta.name.lower()
        if meta.type == "tensor(float)":
            feeds[meta.name] = rng.standard_normal(shape).astype(np.float32)
        elif meta.type == "tensor(float16)":
            feeds[meta.name] = rng.standard_normal(shape).astype(np.float16)
        elif meta.type in ("tensor(int64)", "tensor(int32)"):
            dtype = np.int64 if meta.type == "tensor(int64)" else np.int32
            if name == "sr" and not shape:
                feeds[meta.name] = np.array(16000, dtype=dtype)
            elif "mask" in name:
                feeds[meta.name] = np.ones(shape, dtype=dtype)
            else:
                feeds[meta.name] = rng.integers(0, 1000, shape).astype(dtype)
        elif meta.type == "tensor(bool)":
            feeds[meta.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            raise RuntimeError(f"input {meta.name}: {meta.type} not generated")
    return feeds


def ort_run(path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds)))


def max_relative(reference, other):
    """max |a - b| / (|a| + max(mean|a|, 0.1)) over every output: relative to the element and
    to the output's typical size (a 20-layer net's embedding of magnitude ~10 differs by
    ~1e-5 where it crosses zero), with a floor that judges outputs near zero, e.g. a sigmoid's
    5e-8 against ORT's 0, as np.allclose(rtol=1e-4, atol=1e-5) would."""
    worst = 0.0
    for name, a in reference.items():
        if name not in other:
            return float("inf")
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(other[name], dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        if a.size:
            scale = max(float(np.abs(a).mean()), ATOL / TOLERANCE)
            worst = max(worst, float((np.abs(a - b) / (np.abs(a) + scale)).max()))
    return worst


def collect(paths):
    models = []
    for p in paths:
        if os.path.isdir(p):
            models += sorted(glob.glob(os.path.join(p, "*.onnx")))
        elif os.path.exists(p):
            models.append(p)
    return models


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    parser.add_argument("--out")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--keep", help="keep the simplified models in this folder")
    args = parser.parse_args()
    models = collect(args.models or [os.path.join(ROOT, "bench", "models"),
                                     os.path.join(ROOT, "bench", "real_models", "openwakeword"),
                                     os.path.join(ROOT, "bench", "real_models", "packages")])
    if not models:
        sys.exit("peer_simplifiers: no models (bench/fetch_real_models.sh fetches the real ones)")
    work = args.keep or tempfile.mkdtemp(prefix="peers-")
    os.makedirs(work, exist_ok=True)
    commands = tools(os.path.abspath(args.onnxkit))
    names = list(commands)
    rows = []
    for index, model in enumerate(models):
        stem = os.path.splitext(os.path.basename(model))[0]
        before = model_nodes(model)
        try:
            feeds = make_inputs(model)
            reference = ort_run(model, feeds)
        except Exception as e:  # the original must run in ORT for "matches" to mean anything
            print(f"{stem}: ORT cannot run the original: {e}", file=sys.stderr)
            feeds = reference = None
        order = names[index % len(names):] + names[:index % len(names)]
        results = {}
        for tool in order:
            out = os.path.join(work, f"{stem}.{tool.replace(' ', '_')}.onnx")
            seconds, cpu, rss, code, tail, stdout = timed(commands[tool](model, out), args.timeout)
            result = {"seconds": seconds, "cpu": cpu, "rss": rss, "code": code, "error": tail,
                      "checked": "check: " in stdout and " run(s)" in stdout}
            if code == 0 and os.path.exists(out):
                result["nodes"] = model_nodes(out)
                if reference is not None:
                    try:
                        result["error_rel"] = max_relative(reference, ort_run(out, feeds))
                    except Exception as e:
                        result["error_rel"] = float("inf")
                        result["error"] = f"ORT cannot run the result: {str(e)[:120]}"
            results[tool] = result
            print(f"{stem:20s} {tool:8s} rc {code} {seconds:7.2f}s (CPU {cpu:6.2f}s) {rss:7.0f} MB "
                  f"nodes {result.get('nodes', '-')} rel {result.get('error_rel', '-')} {tail if code else ''}",
                  file=sys.stderr, flush=True)
            if not args.keep:
                for f in glob.glob(out + "*"):
                    os.remove(f)
        rows.append((stem, before, results))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)

    def cell(r, key, fmt):
        return fmt.format(r[key]) if key in r else "failed"

    lines = ["| model | nodes before | nodes after: onnxkit / onnxsim / onnxslim | wall s: onnxkit / onnxsim / onnxslim | CPU s: onnxkit / onnxsim / onnxslim | onnxkit / onnxsim wall | onnxkit's default check | onnxkit --check-n 1: wall s, / onnxsim | peak RSS MB: onnxkit / onnxsim / onnxslim | matches (max rel. error): onnxkit / onnxsim / onnxslim |",
             "| --- | ---: | --- | --- | --- | ---: | --- | --- | --- | --- |"]
    for stem, before, results in rows:
        k, n, s, l = (results[t] for t in names)
        nodes = " / ".join(cell(r, "nodes", "{}") for r in (k, s, l))
        wall = " / ".join(f"{r['seconds']:.2f}" for r in (k, s, l))
        cpu = " / ".join(f"{r['cpu']:.2f}" for r in (k, s, l))
        ratio = f"{k['seconds'] / s['seconds']:.3f}" if s["code"] == 0 else "-"
        rss = " / ".join(f"{r['rss']:.0f}" for r in (k, s, l))

        def match(r):
            if "error_rel" not in r:
                return "failed" if r["code"] else "-"
            return ("yes" if r["error_rel"] <= TOLERANCE else "NO") + f" ({r['error_rel']:.1e})"
        matches = " / ".join(match(r) for r in (k, s, l))
        forced = (f"{n['seconds']:.2f}, {n['seconds'] / s['seconds']:.3f}"
                  if n["code"] == 0 and s["code"] == 0 else "failed")
        checked = "ran" if k["checked"] else "skipped"
        lines.append(f"| {stem} | {before} | {nodes} | {wall} | {cpu} | {ratio} | {checked} | {forced} | {rss} | {matches} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    failed = any(r["code"] != 0 for _, _, results in rows for r in [results["onnxkit"]])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
