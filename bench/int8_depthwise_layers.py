"""Per-layer times of the depthwise convolutions of an int8 model, onnxkit binaries side by side.

    /work/main/.venv/bin/python bench/int8_depthwise_layers.py MODEL ONNXKIT [ONNXKIT ...]
        [--rounds 4] [--iterations 40]

Each round runs `onnxkit bench --threads 1 --profile` once per binary, in turn (alternating),
and takes each depthwise node's (Conv / QLinearConv with group > 1, found by name in MODEL)
median over the round's timed runs; the table gives the best of those medians over the
rounds, per layer and binary, and their sums. Used to compare onnxkit's int8 depthwise kernel
(kernels/int8_depthwise) with oneDNN's: a binary built without it (an older commit) is the
other column. The machine is shared: read the sums of several runs, not one.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile

import onnx


def depthwise_nodes(model):
    graph = onnx.load(model, load_external_data=False).graph
    names = []
    for node in graph.node:
        if node.op_type in ("Conv", "QLinearConv"):
            group = [a.i for a in node.attribute if a.name == "group"]
            if group and group[0] > 1:
                names.append(node.name)
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("binaries", nargs="+")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--iterations", type=int, default=40)
    a = p.parse_args()
    names = depthwise_nodes(a.model)
    times = {b: collections.defaultdict(list) for b in a.binaries}
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace.json")
        for _ in range(a.rounds):
            for binary in a.binaries:
                subprocess.run([binary, "bench", "--threads", "1", "--iterations", str(a.iterations),
                                "--quiet", "--profile", trace, a.model], check=True,
                               capture_output=True)
                per_node = collections.defaultdict(list)
                for event in json.load(open(trace))["traceEvents"]:
                    node = event.get("args", {}).get("node", "")
                    if node in names:
                        per_node[node].append(event["dur"])
                for node, durations in per_node.items():
                    times[binary][node].append(statistics.median(durations))
    print("layer (us)".ljust(50) + "".join(f"{'binary ' + str(i + 1):>12}" for i in range(len(a.binaries))))
    totals = [0.0] * len(a.binaries)
    for node in names:
        row = [min(times[b][node]) if times[b][node] else float("nan") for b in a.binaries]
        totals = [t + v for t, v in zip(totals, row)]
        print(node[-50:].ljust(50) + "".join(f"{v:12.1f}" for v in row))
    print("sum".ljust(50) + "".join(f"{t:12.1f}" for t in totals))
    for i, b in enumerate(a.binaries):
        print(f"binary {i + 1}: {b}")


if __name__ == "__main__":
    main()
