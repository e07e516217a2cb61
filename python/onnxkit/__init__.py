"""onnxkit from Python: a drop-in for onnxsim's ``simplify`` and onnxruntime's CPU API.

    import onnxkit
    model_simp, check = onnxkit.simplify(onnx.load("model.onnx"))

    import onnxkit as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"input": x})

    from onnxkit.quantization import quantize_dynamic      # onnxruntime.quantization's API
    quantize_dynamic("model.onnx", "model.int8.onnx")

docs/python.md lists the onnxruntime and onnxsim names supported and how they differ.
"""

from ._onnxkit import OnnxkitError
from .session import (
    ExecutionMode,
    GraphOptimizationLevel,
    InferenceSession,
    IOBinding,
    ModelMetadata,
    NodeArg,
    RunOptions,
    SessionOptions,
    get_all_providers,
    get_available_providers,
    get_device,
)
from . import quantization
from .simplifier import simplify

__version__ = "0.1.0"

__all__ = [
    "ExecutionMode",
    "GraphOptimizationLevel",
    "InferenceSession",
    "IOBinding",
    "ModelMetadata",
    "NodeArg",
    "OnnxkitError",
    "RunOptions",
    "SessionOptions",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "quantization",
    "simplify",
]
