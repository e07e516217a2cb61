"""Models that went through ONNX Runtime's transformer optimizer (the peer in .venv:
onnxruntime.transformers.optimizer, what ORT's BERT quantization tutorial and HF Optimum's
O2-O4 levels run) and its quantize_dynamic run in onnxkit and match ORT, run by CTest.

1. The repository's tiny exports (tests/data/models: bert_tiny, gpt2_tiny, vit_tiny, the
   bench models' structure at hidden 32) are optimized at the default level and at
   opt_level 1, 2 and 99 (vit_tiny: not 99, whose file holds ORT's hardware-specific
   com.microsoft.nchwc ops), each file must hold the com.microsoft ops that level writes
   (a tool that stops writing them fails here), and quantize_dynamic makes int8 files of them
   (defaults, per_channel, reduce_range: QAttention, QEmbedLayerNormalization); bert_tiny
   also with Optimum O3's Gelu approximation (FastGelu) and without the embedding fusion.
2. Op-level models (onnx.helper) cover what those files do not exercise: every mask_index
   form of Attention and QAttention ([B], [2B], [B, T], [B, S, T], none), unidirectional,
   past/present (GPT-2 decoding), qkv_hidden_sizes, attention_bias, scale and
   mask_filter_value; QAttention with u8 and s8 weights, per-tensor and per-column scales and
   zero points; EmbedLayerNormalization with and without segments, position_ids and its
   embedding_sum output; (Q)EmbedLayerNormalization's mask_index; SkipLayerNormalization with
   a per-batch skip and its sum output; SkipSimplifiedLayerNormalization, Gelu, BiasGelu,
   FastGelu (with and without bias), QuickGelu, BiasAdd; ORT's SimplifiedLayerNormalization
   (its own op in ONNX's domain).
Every file runs in ORT (one thread) and in onnxkit with the reference kernels at level none,
the optimized ones at level all, and the optimized ones held to AVX2 (ONNXKIT_SIMD_LEVEL=avx2
and DNNL_MAX_CPU_ISA=AVX2: the attention engine's oneDNN path, the int8 products without VNNI). Tolerances, max |onnxkit - ORT| over the output's largest
magnitude:
- float files and op-level models, and int8 op-level models (exact integer products, then the
  same float steps): 1e-4 (measured: ~1e-6);
- end-to-end int8 files: 5e-3 (measured on these files: 4e-7). Every op matches ORT to
  ~1e-6, but each product's input goes through DynamicQuantizeLinear, and an input an ulp
  from a rounding boundary lands one quantization step (1/255 of its range) away; later
  layers carry that step. On BERT-base (12 layers, bench/ort_transformer_optimizer.py) every
  op stays within 2e-6 of ORT, the first flipped step comes in layer 2 (7e-4 there) and the
  output ends 1.7% of its range off. Two layers leave room for a flip or two, not for a
  wrong zero point, scale or weight layout (off by far more).
`onnxkit simplify` keeps the com.microsoft nodes of the optimized files (and of their int8
form), infers the shapes of their outputs, and the simplified file gives ORT's outputs of the original in ORT and in
onnxkit. Broken nodes (a wrong mask shape, a missing input, num_heads not dividing the
hidden size) fail with an error naming the node, on both kernel tiers.

usage: ort_transformer_ops_test.py ONNXKIT MODELS_DIR
"""

import collections
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# ORT's optimizer imports torch only to ask whether it runs on ROCm (torch.version.hip), and
# only when it runs ORT's own graph optimizations first (opt_level given); .venv has no torch.
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
from onnxruntime.transformers.fusion_options import FusionOptions  # noqa: E402

RNG = np.random.default_rng(11)
FLOAT_TOL = 1e-4
INT8_END_TO_END_TOL = 5e-3
MS = "com.microsoft"

# name -> (model_type, num_heads, hidden, levels, ops each level must write, ops its
# quantize_dynamic file must hold)
TINY = {
    "bert_tiny": ("bert", 4, 32, [None, 1, 2, 99],
                  {"Attention", "EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu"},
                  {"QAttention", "QEmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu"}),
    "gpt2_tiny": ("gpt2", 4, 32, [None, 1, 2, 99], {"SkipLayerNormalization", "FastGelu"},
                  {"SkipLayerNormalization", "FastGelu"}),
    "vit_tiny": ("vit", 4, 32, [None, 1, 2], {"SkipLayerNormalization", "BiasGelu"},
                 {"SkipLayerNormalization", "BiasGelu"}),
}
QUANTIZE = {"q": {}, "q per_channel": {"per_channel": True}, "q reduce_range": {"reduce_range": True}}
# bert_tiny with the optimizer's options changed: Optimum's O3 (O2 plus the Gelu approximation:
# FastGelu with a bias) and without the embedding fusion (ai.onnx LayerNormalization at opset
# 13, and Attention's mask_index made from the raw attention_mask).
BERT_OPTIONS = {"gelu approximation (Optimum O3)": ("enable_gelu_approximation", True, {"FastGelu"}),
                "no EmbedLayerNormalization": ("enable_embed_layer_norm", False, {"Attention"})}
KERNELS = [("reference", ["--kernels", "reference", "--level", "none"], {}), ("optimized", [], {}),
           ("optimized avx2", [], {"ONNXKIT_SIMD_LEVEL": "avx2", "DNNL_MAX_CPU_ISA": "AVX2"})]


def ms_ops(path):
    return {n.op_type for n in onnx.load(path, load_external_data=False).graph.node if n.domain == MS}


def run_ort(path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [o.name for o in session.get_outputs()], session.run(None, feeds)


def run_onnxkit(onnxkit, path, feeds, folder, extra=(), env=None, command="run"):
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    args = [onnxkit, command, path, "--quiet", "--output-dir", folder, *extra]
    for name, value in feeds.items():
        file = os.path.join(folder, f"in_{name}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    run = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return run.returncode, run.stderr.strip()


def compare(onnxkit, path, feeds, tmp, label, tolerance, expected=None):
    """Failures of `path` against ORT on every kernel tier; `expected` (names, values) from
    another file (a simplified file is compared with the original's ORT outputs)."""
    names, want = expected or run_ort(path, feeds)
    failures, worst = [], 0.0
    folder = os.path.join(tmp, "out")
    for tier, extra, env in KERNELS:
        code, error = run_onnxkit(onnxkit, path, feeds, folder, extra, env)
        if code:
            failures.append(f"{label} [{tier}]: onnxkit failed: {error}")
            continue
        for name, value in zip(names, want):
            file = os.path.join(folder, f"{name.replace('/', '_')}.npy")
            if not os.path.exists(file):
                failures.append(f"{label} [{tier}]: no output {name}")
                continue
            got = np.load(file)
            if got.shape != value.shape:
                failures.append(f"{label} [{tier}]: {name} has shape {got.shape}, ORT {value.shape}")
                continue
            if value.dtype.kind in "iu":
                if not np.array_equal(got, value):
                    failures.append(f"{label} [{tier}]: {name} differs from ORT: {got} vs {value}")
                continue
            span = float(np.abs(value).max()) or 1.0
            diff = float(np.abs(got.astype(np.float64) - value).max()) / span
            worst = max(worst, diff)
            if not diff <= tolerance:
                failures.append(f"{label} [{tier}]: {name} is {diff:.3g} of its range off ORT "
                                f"(tolerance {tolerance})")
    return failures, worst


def tiny_feeds(path, batch=2, seq=7):
    model = onnx.load(path, load_external_data=False)
    feeds = {}
    for i in model.graph.input:
        t = i.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else (batch if k == 0 else seq)
                for k, d in enumerate(t.shape.dim)]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        if "mask" in i.name:
            value = np.ones(dims, dtype)
            value[1, seq - 2:] = 0  # right padding in the second sequence
        elif dtype.kind in "iu":
            value = RNG.integers(0, 100, dims).astype(dtype)
        else:
            value = RNG.standard_normal(dims).astype(dtype)
        feeds[i.name] = value
    return feeds


def optimized_files(models_dir, tmp):
    """(label, path, feeds, ops wanted, tolerance) of every optimized and quantized file."""
    files = []
    for name, (model_type, heads, hidden, levels, wanted, wanted_q) in TINY.items():
        source = os.path.join(models_dir, name, "model.onnx")
        feeds = tiny_feeds(source)
        for level in levels:
            label = f"{name} opt_level {level if level is not None else 'default'}"
            kwargs = {} if level is None else {"opt_level": level}
            optimized = optimizer.optimize_model(source, model_type=model_type, num_heads=heads,
                                                 hidden_size=hidden, **kwargs)
            path = os.path.join(tmp, f"{name}_{level}.onnx")
            optimized.save_model_to_file(path)
            files.append((label, path, feeds, wanted, FLOAT_TOL))
            if level not in (None, 2):
                continue
            for q_label, q_kwargs in QUANTIZE.items():
                q_path = path.replace(".onnx", f"_{q_label.replace(' ', '_')}.onnx")
                # ORT's tool cannot type the outputs of the com.microsoft ops in gpt2's file
                # without a default ("Unable to find data type for weight_name=..."), which
                # its error message itself suggests.
                extra = {"DefaultTensorType": TensorProto.FLOAT} if name == "gpt2_tiny" else {}
                quantize_dynamic(path, q_path, weight_type=QuantType.QInt8, extra_options=extra,
                                 **q_kwargs)
                files.append((f"{label}, {q_label}", q_path, feeds, wanted_q, INT8_END_TO_END_TOL))
    source = os.path.join(models_dir, "bert_tiny", "model.onnx")
    for label, (option, value, wanted) in BERT_OPTIONS.items():
        options = FusionOptions("bert")
        setattr(options, option, value)
        optimized = optimizer.optimize_model(source, model_type="bert", num_heads=4, hidden_size=32,
                                             optimization_options=options)
        path = os.path.join(tmp, f"bert_tiny_{option}.onnx")
        optimized.save_model_to_file(path)
        files.append((f"bert_tiny {label}", path, tiny_feeds(source), wanted, FLOAT_TOL))
        q_path = path.replace(".onnx", "_q.onnx")
        quantize_dynamic(path, q_path, weight_type=QuantType.QInt8)
        files.append((f"bert_tiny {label}, q", q_path, tiny_feeds(source), {"QAttention"},
                      INT8_END_TO_END_TOL))
    return files


# ---------------------------------------------------------------------------------------
# Op-level models.

def make_model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def weight(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def attention_case(name, batch=2, seq=5, hidden=16, heads=4, mask=None, past=0, present=False,
                   attention_bias=False, v_hidden=None, quantized=None, **attrs):
    """A model with one Attention (or QAttention when `quantized` is (weight dtype,
    per_column)) and its feeds."""
    v_hidden = v_hidden or hidden
    width = 2 * hidden + v_hidden
    if v_hidden != hidden:
        attrs["qkv_hidden_sizes"] = [hidden, hidden, v_hidden]
    inits, feeds = {}, {}
    inputs, node_inputs = [], []
    total = past + seq
    if quantized:
        w_dtype, per_column = quantized
        lo, hi = (-128, 127) if w_dtype == np.int8 else (0, 255)
        inits["w"] = RNG.integers(lo, hi + 1, (hidden, width)).astype(w_dtype)
        inits["bias"] = weight(width)
        inits["w_scale"] = (RNG.uniform(0.001, 0.01, width) if per_column else np.array(0.004)).astype(np.float32)
        inits["w_zp"] = (RNG.integers(lo // 4 + hi // 2, hi // 2 + hi // 4, width) if per_column
                         else np.array(hi // 2 - 3)).astype(w_dtype)
        feeds["x"] = RNG.integers(0, 256, (batch, seq, hidden)).astype(np.uint8)
        feeds["x_scale"] = np.array(0.02, np.float32)
        feeds["x_zp"] = np.array(131, np.uint8)
        inputs += [("x", TensorProto.UINT8, [batch, seq, hidden]), ("x_scale", TensorProto.FLOAT, []),
                   ("x_zp", TensorProto.UINT8, [])]
        node_inputs = ["x", "w", "bias", "x_scale", "w_scale", "", "x_zp", "w_zp", ""]
        mask_at, past_at = 5, 8
    else:
        inits["w"] = weight(hidden, width)
        inits["bias"] = weight(width)
        feeds["x"] = RNG.standard_normal((batch, seq, hidden)).astype(np.float32)
        inputs.append(("x", TensorProto.FLOAT, [batch, seq, hidden]))
        node_inputs = ["x", "w", "bias", "", "", ""]
        mask_at, past_at = 3, 4
    if mask is not None:
        feeds["mask"] = mask
        inputs.append(("mask", TensorProto.INT32, list(mask.shape)))
        node_inputs[mask_at] = "mask"
    if past:
        feeds["past"] = RNG.standard_normal((2, batch, heads, past, hidden // heads)).astype(np.float32)
        inputs.append(("past", TensorProto.FLOAT, list(feeds["past"].shape)))
        node_inputs[past_at] = "past"
    if attention_bias:
        feeds["ab"] = RNG.standard_normal((1, heads, seq, total)).astype(np.float32)
        inputs.append(("ab", TensorProto.FLOAT, [1, heads, seq, total]))
        node_inputs[5] = "ab"
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    outputs = ["y"] + (["present"] if present or past else [])
    op = "QAttention" if quantized else "Attention"
    node = helper.make_node(op, node_inputs, outputs, name=f"{op}_{name}", domain=MS,
                            num_heads=heads, **attrs)
    model = make_model([node], inputs, [(o, TensorProto.FLOAT) for o in outputs], inits)
    return name, model, feeds


def key_lengths(*lengths):
    return np.array(lengths, np.int32)


def attention_cases():
    b, s = 2, 5
    raw2 = np.ones((b, s), np.int32)
    raw2[0, 3:] = 0
    raw3 = RNG.integers(0, 2, (b, s, s)).astype(np.int32)
    raw3[:, :, 0] = 1
    cases = []
    for quantized in [None, (np.int8, False), (np.uint8, True), (np.int8, True)]:
        tag = "" if not quantized else f" q{np.dtype(quantized[0]).name}{' per-column' if quantized[1] else ''}"
        cases += [
            attention_case("plain" + tag, quantized=quantized),
            attention_case("key lengths" + tag, mask=key_lengths(3, 5), quantized=quantized),
            attention_case("ends and starts" + tag, mask=np.array([4, 5, 1, 0], np.int32), quantized=quantized),
            attention_case("raw 2-D" + tag, mask=raw2, quantized=quantized),
            attention_case("raw 3-D" + tag, mask=raw3, quantized=quantized),
            attention_case("unidirectional" + tag, unidirectional=1, quantized=quantized),
            attention_case("unidirectional past" + tag, unidirectional=1, past=3, quantized=quantized),
            attention_case("decode one token" + tag, seq=1, unidirectional=1, past=6,
                           mask=np.ones((b, 7), np.int32), quantized=quantized),
            attention_case("present only" + tag, present=True, quantized=quantized),
        ]
    cases += [
        attention_case("qkv_hidden_sizes", v_hidden=8),
        attention_case("attention_bias", attention_bias=True, mask=raw2),
        attention_case("scale and mask_filter_value", scale=0.3, mask_filter_value=-50.0, mask=raw2),
        attention_case("one head, 64 wide", hidden=64, heads=1, seq=9, mask=key_lengths(9, 4)),
    ]
    return cases


def embed_case(name, segment=True, mask=True, position_ids=False, embedding_sum=False,
               quantized=None, batch=2, seq=6, hidden=16):
    tables = {"word": weight(50, hidden), "pos": weight(seq + 2, hidden), "seg": weight(2, hidden),
              "gamma": weight(hidden) + 1, "beta": weight(hidden)}
    feeds = {"ids": RNG.integers(0, 50, (batch, seq)).astype(np.int32)}
    inputs = [("ids", TensorProto.INT32, [batch, seq])]
    if segment:
        feeds["seg_ids"] = RNG.integers(0, 2, (batch, seq)).astype(np.int32)
        inputs.append(("seg_ids", TensorProto.INT32, [batch, seq]))
    if mask:
        m = np.ones((batch, seq), np.int32)
        m[1, 4:] = 0
        feeds["mask"] = m
        inputs.append(("mask", TensorProto.INT32, [batch, seq]))
    names = ["word", "pos", "seg" if segment else "", "gamma", "beta"]
    inits = {}
    if quantized:
        lo, hi = (-128, 127) if quantized == np.int8 else (0, 255)
        scales, zps = [], []
        for t in ["word", "pos", "seg", "gamma", "beta"]:
            values = tables[t]
            scale = float(values.max() - values.min()) / 255
            zp = int(np.clip(round(lo - values.min() / scale), lo, hi))
            inits[f"{t}_q"] = np.clip(np.round(values / scale) + zp, lo, hi).astype(quantized)
            inits[f"{t}_s"] = np.array(scale, np.float32)
            inits[f"{t}_z"] = np.array(zp, quantized)
        seg = "seg" if segment else ""
        node_inputs = ["ids", "seg_ids" if segment else "", "word_q", "pos_q", seg and "seg_q",
                       "gamma_q", "beta_q", "mask" if mask else "", "word_s", "pos_s",
                       seg and "seg_s", "gamma_s", "beta_s", "word_z", "pos_z", seg and "seg_z",
                       "gamma_z", "beta_z"]
        if not segment:
            inits = {k: v for k, v in inits.items() if not k.startswith("seg")}
        node = helper.make_node("QEmbedLayerNormalization", node_inputs, ["y", "mask_index"],
                                name=f"QEmbed_{name}", domain=MS, epsilon=1e-12)
        outputs = ["y", "mask_index"]
    else:
        inits = {k: v for k, v in tables.items() if segment or k != "seg"}
        node_inputs = ["ids", "seg_ids" if segment else ""] + names + ["mask" if mask else ""]
        if position_ids:
            feeds["position_ids"] = RNG.integers(0, seq + 2, (1, seq)).astype(np.int32)
            inputs.append(("position_ids", TensorProto.INT32, [1, seq]))
            node_inputs.append("position_ids")
        outputs = ["y", "mask_index"] + (["sum"] if embedding_sum else [])
        node = helper.make_node("EmbedLayerNormalization", node_inputs, outputs,
                                name=f"Embed_{name}", domain=MS, epsilon=1e-12)
    types_ = {"y": TensorProto.FLOAT, "mask_index": TensorProto.INT32, "sum": TensorProto.FLOAT}
    model = make_model([node], inputs, [(o, types_[o]) for o in outputs], inits)
    return name, model, feeds


def embed_cases():
    return [
        embed_case("embed"),
        embed_case("embed no segment, no mask", segment=False, mask=False),
        embed_case("embed position_ids and sum", position_ids=True, embedding_sum=True),
        embed_case("qembed u8", quantized=np.uint8),
        embed_case("qembed s8 no segment", quantized=np.int8, segment=False),
    ]


def elementwise_cases():
    b, s, h = 2, 5, 24
    x = RNG.standard_normal((b, s, h)).astype(np.float32) * 2
    skip_full = RNG.standard_normal((b, s, h)).astype(np.float32)
    skip_row = RNG.standard_normal((s, h)).astype(np.float32)
    inits = {"gamma": weight(h) + 1, "beta": weight(h), "bias": weight(h)}
    f = TensorProto.FLOAT
    cases = []

    def case(name, op, node_inputs, feeds, outputs=("y",), **attrs):
        node = helper.make_node(op, list(node_inputs), list(outputs), name=f"{op}_{name}", domain=MS, **attrs)
        used = {k: v for k, v in inits.items() if k in node_inputs}
        inputs = [(k, f, list(v.shape)) for k, v in feeds.items()]
        cases.append((name, make_model([node], inputs, [(o, f) for o in outputs if o], used), feeds))

    case("skip ln", "SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
         {"x": x, "skip": skip_full}, ("y", "", "", "sum"), epsilon=1e-5)
    case("skip ln per-batch skip", "SkipLayerNormalization", ["x", "skip", "gamma"],
         {"x": x, "skip": skip_row})
    case("skip simplified ln", "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
         {"x": x, "skip": skip_full}, ("y", "", "", "sum"), epsilon=1e-6)
    case("gelu", "Gelu", ["x"], {"x": x})
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["y"],
                            name="SimplifiedLayerNormalization_0", epsilon=1e-6)
    cases.append(("simplified ln (ai.onnx, ORT's)",
                  make_model([node], [("x", f, [b, s, h])], [("y", f)], {"gamma": inits["gamma"]}),
                  {"x": x}))
    case("bias gelu", "BiasGelu", ["x", "bias"], {"x": x})
    case("fast gelu", "FastGelu", ["x"], {"x": x})
    case("fast gelu bias", "FastGelu", ["x", "bias"], {"x": x})
    case("quick gelu", "QuickGelu", ["x"], {"x": x}, alpha=1.5)
    return cases


def bias_add_case():
    """BiasAdd has no CPU kernel in ORT (CUDA only): its expected output is computed here."""
    x = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    skip = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    bias = weight(8)
    node = helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], name="BiasAdd_0", domain=MS)
    model = make_model([node], [("x", TensorProto.FLOAT, [2, 6, 8]), ("skip", TensorProto.FLOAT, [2, 6, 8])],
                       [("y", TensorProto.FLOAT)], {"bias": bias})
    return "bias add", model, {"x": x, "skip": skip}, (["y"], [x + bias + skip])


# ---------------------------------------------------------------------------------------
# simplify and bad input.

def simplify_failures(onnxkit, label, path, feeds, tmp, tolerance):
    out = path.replace(".onnx", "_simplified.onnx")
    run = subprocess.run([onnxkit, "simplify", path, out], capture_output=True, text=True)
    if run.returncode:
        return [f"{label}: simplify failed: {run.stderr.strip()}"]
    failures = []
    before, after = ms_ops(path), ms_ops(out)
    if before != after:
        failures.append(f"{label}: simplify changed the com.microsoft ops {sorted(before)} -> {sorted(after)}")
    model = onnx.load(out)
    typed = {v.name: v for v in list(model.graph.value_info) + list(model.graph.output)}
    for node in model.graph.node:
        if node.domain == MS and node.op_type in ("Attention", "SkipLayerNormalization",
                                                  "EmbedLayerNormalization"):
            value = typed.get(node.output[0])
            if value is None or len(value.type.tensor_type.shape.dim) != 3:
                failures.append(f"{label}: simplify inferred no rank-3 shape for {node.op_type} "
                                f"{node.name}'s output")
    expected = run_ort(path, feeds)
    names, in_ort = run_ort(out, feeds)
    for name, a, b in zip(names, expected[1], in_ort):
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5 * (float(np.abs(a).max()) or 1)):
            failures.append(f"{label}: the simplified file's {name} in ORT differs from the original's")
    more, _ = compare(onnxkit, out, feeds, tmp, f"{label} simplified", tolerance, expected)
    return failures + more


def bad_input_failures(onnxkit, tmp):
    failures = []

    def expect_error(label, model, feeds, node_name, words):
        path = os.path.join(tmp, "bad.onnx")
        onnx.save(model, path)
        for tier, extra, env in KERNELS[:2]:
            code, error = run_onnxkit(onnxkit, path, feeds, os.path.join(tmp, "bad_out"), extra, env)
            if code == 0 or node_name not in error or any(w not in error for w in words):
                failures.append(f"bad input ({label}, {tier}): expected an error naming {node_name} "
                                f"and {words}, got code {code}: {error}")
            else:
                print(f"ok   bad input ({label}, {tier}): {error.splitlines()[-1][:160]}")

    _, model, feeds = attention_case("wrong mask", mask=np.ones((2, 4), np.int32))
    expect_error("Attention mask [2, 4] for sequence 5", model, feeds, "Attention_wrong mask", ["mask_index", "[2,4]"])
    _, model, feeds = attention_case("4-D mask", mask=np.ones((2, 1, 5, 5), np.int32))
    expect_error("Attention 4-D mask", model, feeds, "Attention_4-D mask", ["4-D"])
    _, model, feeds = attention_case("heads", heads=3)
    expect_error("num_heads 3, hidden 16", model, feeds, "Attention_heads", ["num_heads 3"])
    _, model, feeds = attention_case("missing weights")
    del model.graph.node[0].input[1:]
    expect_error("Attention without weights", model, feeds, "Attention_missing weights", ["input 1"])
    _, model, feeds = attention_case("q wrong mask", mask=np.ones((3,), np.int32), quantized=(np.int8, False))
    expect_error("QAttention mask [3] for batch 2", model, feeds, "QAttention_q wrong mask", ["mask_index"])
    _, model, feeds = embed_case("bad id")
    feeds["ids"][1, 2] = 50
    expect_error("EmbedLayerNormalization id out of range", model, feeds, "Embed_bad id", ["input_ids", "[1, 2]", "50"])
    _, model, feeds = embed_case("bad mask")
    feeds["mask"] = np.ones((2, 3), np.int32)
    model.graph.input[2].CopyFrom(helper.make_tensor_value_info("mask", TensorProto.INT32, [2, 3]))
    expect_error("EmbedLayerNormalization mask [2, 3]", model, feeds, "Embed_bad mask", ["mask", "[2,3]"])
    return failures


def main():
    onnxkit, models_dir = sys.argv[1], sys.argv[2]
    failures, passed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        inventory = collections.defaultdict(set)
        for label, path, feeds, wanted, tolerance in optimized_files(models_dir, tmp):
            ops = ms_ops(path)
            for op in ops:
                inventory[op].add(label.split(",")[0].split(" ")[0])
            file_failures = []
            if not wanted <= ops:
                file_failures.append(f"{label}: the file holds {sorted(ops)}, not all of {sorted(wanted)}")
            more, worst = compare(onnxkit, path, feeds, tmp, label, tolerance)
            file_failures += more
            if label.endswith(("default", "99", "default, q")):
                file_failures += simplify_failures(onnxkit, label, path, feeds, tmp, tolerance)
            failures += file_failures
            passed += 1
            if not file_failures:
                print(f"ok   {label}: {sorted(ops)}, max |diff| {worst:.2g} of range")
        cases = [(*case, None) for case in attention_cases() + embed_cases() + elementwise_cases()]
        for label, model, feeds, expected in cases + [bias_add_case()]:
            path = os.path.join(tmp, "op.onnx")
            onnx.save(model, path)
            more, worst = compare(onnxkit, path, feeds, tmp, label, FLOAT_TOL, expected)
            failures += more
            passed += 1
            if not more:
                print(f"ok   {label}: max |diff| {worst:.2g} of range")
        failures += bad_input_failures(onnxkit, tmp)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{passed} files ran, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
