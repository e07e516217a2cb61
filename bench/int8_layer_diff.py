"""Where onnxkit and ONNX Runtime part on a QDQ int8 model, layer by layer.

    /work/main/.venv/bin/python bench/int8_layer_diff.py MODEL.onnx [--peer ort|reference]
        [--ort-level all|none] [--onnxkit-level all] [--onnxkit build/onnxkit] [--show 12]

Every QuantizeLinear output of the model (the int8 value each layer hands on) becomes a graph
output; onnxkit (optimized kernels) and the peer run the model on the same random input (one
thread) and each layer's integers are compared: how many elements differ and by how many
steps at most, in graph order. The first layer that differs is where the two computations
part; later differences may be carried from it.

--peer ort: ONNX Runtime at --ort-level. Mind that the extra graph outputs change what ORT
fuses (a Q whose output leaves the graph keeps its float producer in some selectors), so at
level all this shows where ORT's graph differs as much as where the arithmetic does.
--peer reference: onnxkit's reference kernels at the same level (the fused int8 ops run
their reference kernels, which compute MLAS's formulas): where the optimized kernels leave
the reference's integers. onnxruntime is the peer here, never a dependency of onnxkit.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEVELS = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
          "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
          "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
          "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}


def with_layer_outputs(path, out_path):
    model = onnx.load(path)
    existing = {o.name for o in model.graph.output}
    layers = []
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear" and node.output[0] not in existing:
            layers.append(node.output[0])
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(node.output[0]))
    onnx.save(model, out_path)
    return layers


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--ort-level", default="all", choices=LEVELS)
    p.add_argument("--onnxkit-level", default="all")
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    p.add_argument("--peer", default="ort", choices=["ort", "reference"])
    p.add_argument("--show", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "layers.onnx")
        layers = with_layer_outputs(a.model, model)
        o = ort.SessionOptions()
        o.intra_op_num_threads = 1
        o.graph_optimization_level = LEVELS[a.ort_level]
        session = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(a.seed)
        feeds, args = {}, []
        for i in session.get_inputs():
            dims = [d if isinstance(d, int) else 1 for d in i.shape]
            feeds[i.name] = rng.normal(0, 1, dims).astype(np.float32)
            np.save(os.path.join(folder, f"{i.name}.npy"), feeds[i.name])
            args += ["--input", f"{i.name}={os.path.join(folder, i.name + '.npy')}"]
        names = [x.name for x in session.get_outputs()]

        def onnxkit(kernels, out_dir):
            subprocess.run([a.onnxkit, "run", model, "--threads", "1", "--level", a.onnxkit_level,
                            "--kernels", kernels, "--output-dir", out_dir, *args],
                           check=True, capture_output=True, text=True)
            return {n: np.load(os.path.join(out_dir, f"{n.replace('/', '_')}.npy")) for n in names}

        if a.peer == "ort":
            expected = dict(zip(names, session.run(None, feeds)))
        else:
            expected = onnxkit("reference", os.path.join(folder, "reference"))
        actual = onnxkit("optimized", os.path.join(folder, "out"))
        differing = 0
        for name in names:
            got, want = actual[name], expected[name]
            diff = np.abs(got.astype(np.int64 if got.dtype != np.float32 else np.float64) -
                          want.astype(got.dtype).astype(
                              np.int64 if got.dtype != np.float32 else np.float64))
            count = int((diff != 0).sum())
            if name not in layers:
                print(f"output {name}: max |diff| {float(diff.max()):.4g}")
                continue
            if count:
                differing += 1
                if differing <= a.show:
                    print(f"layer {layers.index(name):3d} {name}: {count} of {diff.size} elements "
                          f"differ, max {int(diff.max())} steps")
        peer = f"ORT level {a.ort_level}" if a.peer == "ort" else "onnxkit's reference kernels"
        print(f"{differing} of {len(layers)} quantized layers differ "
              f"(onnxkit level {a.onnxkit_level} against {peer})")


if __name__ == "__main__":
    sys.exit(main())
