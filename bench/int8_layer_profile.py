"""Per-layer time of an int8 model in onnxkit and in ONNX Runtime, one thread, side by side.

    /work/main/.venv/bin/python bench/int8_layer_profile.py MODEL.onnx [--onnxkit build/onnxkit]
        [--rounds 3] [--iterations 20] [--layers] [--json OUT]

Both runtimes profile the same file on the same random input (onnxkit `bench --profile`,
ORT SessionOptions.enable_profiling), in alternating rounds. Per node the fastest time over
all runs of all rounds is kept (the machine is shared: the least disturbed run). Convolutions
are grouped by shape (kernel, stride, input channels -> output channels, output size), the
other nodes by op type; ORT's and onnxkit's node names are matched after dropping ORT's
`_token_N` suffix, and nodes only one runtime has (ORT's NHWC transposes, onnxkit's chain
edges) are listed under their op type. Times are microseconds per run.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ORT_PROFILER = r"""
import sys, json, numpy as np, onnxruntime as ort
model, iterations, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
feeds = {a.split('=')[0]: np.load(a.split('=', 1)[1]) for a in sys.argv[4:]}
o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
o.enable_profiling = True; o.profile_file_prefix = prefix
s = ort.InferenceSession(model, o, providers=['CPUExecutionProvider'])
for _ in range(iterations + 3): s.run(None, feeds)  # per node the fastest run counts
print(s.end_profiling())
"""


def conv_shapes(model_path):
    """Node name -> (kernel, stride, group, in channels, out channels) of every conv."""
    model = onnx.load(model_path, load_external_data=False)
    inits = {t.name: t for t in model.graph.initializer}
    shapes = {}
    for node in model.graph.node:
        w_index = {"QLinearConv": 3, "Conv": 1, "ConvInteger": 1}.get(node.op_type)
        if w_index is None:
            continue
        w_name = node.input[w_index]
        w = inits.get(w_name)
        if w is None:  # QDQ: W comes from a DequantizeLinear
            producer = next((n for n in model.graph.node if w_name in n.output), None)
            w = inits.get(producer.input[0]) if producer is not None else None
        if w is None:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        group = attrs.get("group", 1)
        dims = list(w.dims)
        shapes[node.name] = (
            "x".join(str(k) for k in dims[2:]),
            attrs.get("strides", [1])[0],
            group,
            dims[1] * group,
            dims[0],
        )
    return shapes


def ort_times(model, inputs, iterations, folder):
    prefix = os.path.join(folder, "ort")
    path = subprocess.run([sys.executable, "-c", ORT_PROFILER, model, str(iterations), prefix,
                           *inputs], check=True, capture_output=True, text=True).stdout.strip()
    times = collections.defaultdict(lambda: float("inf"))
    ops, out_shapes = {}, {}
    for e in json.load(open(path)):
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = re.sub(r"(_token_\d+)?_kernel_time$", "", e["name"])
        times[name] = min(times[name], float(e["dur"]))
        ops[name] = e["args"].get("op_name", "?")
        shape = e["args"].get("output_type_shape") or [{}]
        out_shapes[name] = next(iter(shape[0].values()), [])
    os.remove(path)
    return times, ops, out_shapes


def onnxkit_times(exe, model, inputs, iterations, folder):
    trace = os.path.join(folder, "onnxkit.json")
    args = [exe, "bench", model, "--threads", "1", "--iterations", str(iterations), "--json",
            "--profile", trace]
    for i in inputs:
        args += ["--input", i]
    subprocess.run(args, check=True, capture_output=True, text=True)
    times = collections.defaultdict(lambda: float("inf"))
    ops = {}
    events = sorted(json.load(open(trace))["traceEvents"], key=lambda e: e["ts"])
    first = events[0]["args"]["node"] if events else None
    unnamed = collections.Counter()
    for e in events:
        name = e["args"]["node"]
        if name == first and name:
            unnamed.clear()  # a new run
        if not name:  # nodes onnxkit's passes add (chain-edge transposes), by order in a run
            unnamed[e["name"]] += 1
            name = f"({e['name']} {unnamed[e['name']]} added by onnxkit)"
        times[name] = min(times[name], float(e["dur"]))
        ops[name] = e["name"].split("::")[-1]
    return times, ops


def make_inputs(model_path, folder):
    rng = np.random.default_rng(0)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    paths = []
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        path = os.path.join(folder, f"{i.name}.npy")
        np.save(path, rng.normal(0, 1, shape).astype(np.float32))
        paths.append(f"{i.name}={path}")
    return paths


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--layers", action="store_true", help="also print every conv layer")
    p.add_argument("--json", help="write the per-node times to this file")
    a = p.parse_args()
    shapes = conv_shapes(a.model)
    ok = collections.defaultdict(lambda: float("inf"))
    rt = collections.defaultdict(lambda: float("inf"))
    ok_ops, rt_ops, out_shapes = {}, {}, {}
    with tempfile.TemporaryDirectory() as folder:
        inputs = make_inputs(a.model, folder)
        for _ in range(a.rounds):
            t, o = onnxkit_times(a.onnxkit, a.model, inputs, a.iterations, folder)
            for k, v in t.items():
                ok[k] = min(ok[k], v)
            ok_ops.update(o)
            t, o, s = ort_times(a.model, inputs, a.iterations, folder)
            for k, v in t.items():
                rt[k] = min(rt[k], v)
            rt_ops.update(o)
            out_shapes.update(s)

    groups = collections.OrderedDict()
    layers = []
    for name in list(dict.fromkeys(list(rt) + list(ok))):
        if name in shapes:
            kernel, stride, group, cin, cout = shapes[name]
            out = out_shapes.get(name, [])
            size = f"{out[1]}x{out[2]}" if len(out) == 4 else "?"
            kind = "depthwise" if group == cin and group > 1 else "conv"
            key = f"{kind} {kernel} s{stride} {cin}->{cout} out {size}"
            layers.append((name, key, ok.get(name, float("nan")), rt.get(name, float("nan"))))
        else:
            key = f"{ok_ops.get(name) or rt_ops.get(name)}"
        g = groups.setdefault(key, [0, 0.0, 0.0])
        g[0] += 1
        g[1] += ok[name] if name in ok else 0.0
        g[2] += rt[name] if name in rt else 0.0
    total_ok = sum(ok.values())
    total_rt = sum(rt.values())
    print(f"{a.model}: sum of per-node fastest times, onnxkit {total_ok:.0f} us, ORT {total_rt:.0f} us,"
          f" ratio {total_ok / total_rt:.3f}")
    print("| layers (shape or op) | nodes | onnxkit us | ORT us | onnxkit / ORT | onnxkit - ORT us |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key, (n, t_ok, t_rt) in sorted(groups.items(), key=lambda kv: -max(kv[1][1], kv[1][2])):
        ratio = f"{t_ok / t_rt:.2f}" if t_rt > 0 and t_ok > 0 else "-"
        print(f"| {key} | {n} | {t_ok:.1f} | {t_rt:.1f} | {ratio} | {t_ok - t_rt:+.1f} |")
    if a.layers:
        for name, key, t_ok, t_rt in layers:
            print(f"{name}: {key}: onnxkit {t_ok:.1f} ORT {t_rt:.1f} ({t_ok / t_rt:.2f})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"onnxkit": ok, "ort": rt, "shapes": shapes}, f, indent=1)


if __name__ == "__main__":
    main()
