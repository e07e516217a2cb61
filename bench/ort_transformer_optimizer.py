"""ONNX Runtime's transformer optimizer (onnxruntime.transformers.optimizer: what ORT's BERT
quantization tutorial and HF Optimum's O2-O4 levels run) and quantize_dynamic on its output:
which ops the files hold, and onnxkit against ORT on them, side by side.

    /work/main/.venv/bin/python bench/ort_transformer_optimizer.py inventory [--models DIR] [MODEL ...]
    /work/main/.venv/bin/python bench/ort_transformer_optimizer.py time [--rounds 3]
        [--iterations 10] [--models DIR] [--onnxkit build/onnxkit] [CASE ...]

inventory: optimizes bert_base (model_type bert, 12 heads, hidden 768), gpt2_6l (gpt2) and
vit_s16_6l (vit, 6 heads, hidden 384) at the default level and opt_level 1, 2 and 99, then
quantize_dynamic's each file (defaults, per_channel, reduce_range), and prints the ops of the
com.microsoft domains and the integer ops in each (the table of bench/README.md).
time: CASE is MODEL_LEVEL[_q] (bert_base_default, bert_base_default_q, gpt2_6l_default, ...;
the files are made as above into --work). Each round runs onnxkit's bench and an ORT session,
one thread each, one after the other; the table gives the median over rounds of each one's
median latency and their ratio, and the max |onnxkit - ORT| on the same inputs (sequence
128). The machine is shared: timings are noisy, the ratios from one run are what to quote.
"""
import argparse
import collections
import os
import statistics
import sys
import tempfile
import types

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_side_by_side import accuracy, make_inputs, onnxkit_median, ort_median  # noqa: E402

# ORT's optimizer imports torch only for torch.version.hip (ROCm) when opt_level is given.
if "torch" not in sys.modules:
    try:
        import torch  # noqa: F401
    except ImportError:
        stub = types.ModuleType("torch")
        stub.version = types.SimpleNamespace(hip=None, cuda=None)
        sys.modules["torch"] = stub
        sys.modules["torch.version"] = stub.version
from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402
from onnxruntime.transformers import optimizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {"bert_base": ("bert", 12, 768), "gpt2_6l": ("gpt2", 12, 768),
          "vit_s16_6l": ("vit", 6, 384)}
LEVELS = {"default": None, "1": 1, "2": 2, "99": 99}
QUANTIZE = {"q": {}, "q per_channel": {"per_channel": True},
            "q reduce_range": {"reduce_range": True}}


def optimized(models, work, name, level):
    path = os.path.join(work, f"{name}_{level}.onnx")
    if not os.path.exists(path):
        model_type, heads, hidden = MODELS[name]
        kwargs = {} if LEVELS[level] is None else {"opt_level": LEVELS[level]}
        model = optimizer.optimize_model(os.path.join(models, f"{name}.onnx"), model_type=model_type,
                                         num_heads=heads, hidden_size=hidden, **kwargs)
        model.save_model_to_file(path)
    return path


def quantized(path, label, default_type=False):
    out = path.replace(".onnx", f"_{label.replace(' ', '_')}.onnx")
    if not os.path.exists(out):
        # gpt2's file needs a default type for the outputs of com.microsoft ops ORT's tool
        # cannot type ("Unable to find data type for weight_name=..."; its own suggestion).
        extra = {"DefaultTensorType": onnx.TensorProto.FLOAT} if default_type else {}
        quantize_dynamic(path, out, weight_type=QuantType.QInt8, extra_options=extra,
                         **QUANTIZE[label])
    return out


def ops_summary(path):
    model = onnx.load(path, load_external_data=False)
    counts = collections.Counter((n.domain or "ai.onnx", n.op_type) for n in model.graph.node)
    shown = [f"{op} {k}" for (domain, op), k in sorted(counts.items())
             if domain != "ai.onnx" or op in ("MatMulInteger", "ConvInteger", "LayerNormalization")]
    return ", ".join(shown)


def remove(path):
    """Full-size files are 0.1-0.5 GB each: the inventory keeps only what `time` reads."""
    for f in (path, path.replace(".onnx", "-inferred.onnx")):
        if os.path.exists(f) and not f.endswith(("_default.onnx", "_default_q.onnx")):
            os.remove(f)


def inventory(a):
    for name in a.cases or MODELS:
        for level in LEVELS:
            try:
                path = optimized(a.models, a.work, name, level)
            except Exception as e:  # noqa: BLE001 - reported as the tool's failure
                print(f"| {name} | {level} | | optimizer failed: {str(e)[:80]} |")
                continue
            print(f"| {name} | {level} | | {ops_summary(path)} |", flush=True)
            for label in QUANTIZE:
                try:
                    q = quantized(path, label)
                    note = ""
                except Exception as e:  # noqa: BLE001
                    if name != "gpt2_6l":
                        print(f"| {name} | {level} | {label} | quantize_dynamic failed: {str(e)[:80]} |")
                        continue
                    q = quantized(path, label, default_type=True)
                    note = " (with DefaultTensorType: without, ORT's tool fails)"
                print(f"| {name} | {level} | {label} | {ops_summary(q)}{note} |", flush=True)
                remove(q)
            remove(path)


def time_cases(a):
    for case in a.cases or ["bert_base_default", "bert_base_default_q", "gpt2_6l_default",
                            "gpt2_6l_default_q", "vit_s16_6l_default", "vit_s16_6l_default_q"]:
        name, level = case.removesuffix("_q").rsplit("_", 1)
        path = optimized(a.models, a.work, name, level)
        if case.endswith("_q"):
            path = quantized(path, "q", default_type=name == "gpt2_6l")
        with tempfile.TemporaryDirectory() as folder:
            feeds, inputs = make_inputs(path, folder)
            times = {"onnxkit": [], "ORT": []}
            for _ in range(a.rounds):
                times["onnxkit"].append(onnxkit_median(a.onnxkit, path, inputs, a.iterations)[0])
                times["ORT"].append(ort_median(path, inputs, a.iterations)[0])
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{case}: onnxkit {med['onnxkit']:.1f} ms, ORT {med['ORT']:.1f} ms, "
                  f"onnxkit/ORT {med['onnxkit'] / med['ORT']:.2f} | rounds "
                  f"{ {k: [round(x, 1) for x in v] for k, v in times.items()} }", flush=True)
            print("  vs ORT: " + accuracy(a.onnxkit, path, feeds, inputs, folder), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["inventory", "time"])
    p.add_argument("cases", nargs="*")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--models", default=os.path.join(ROOT, "bench", "models"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "onnxkit_ort_optimizer"))
    p.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    a = p.parse_intermixed_args()
    os.makedirs(a.work, exist_ok=True)
    np.random.seed(0)
    inventory(a) if a.mode == "inventory" else time_cases(a)


if __name__ == "__main__":
    main()
