"""Shared fixtures: the same test runs against the real thing (onnxruntime, onnxsim) and
against onnxkit, and compares their results with each other and with the onnxkit CLI."""

import importlib
import os
import pathlib
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY_CNN = ROOT / "examples" / "models" / "tiny_cnn.onnx"
TEST_MODELS = ROOT / "tests" / "data" / "models"


def cli():
    """The onnxkit CLI of this build (CTest passes it in ONNXKIT_CLI)."""
    path = pathlib.Path(os.environ.get("ONNXKIT_CLI", ROOT / "build" / "onnxkit"))
    assert path.is_file(), f"onnxkit CLI not found at {path} (build it, or set ONNXKIT_CLI)"
    return str(path)


def run_cli(*args):
    result = subprocess.run([cli(), *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, f"onnxkit {' '.join(map(str, args))}: {result.stderr}"
    return result.stdout


@pytest.fixture(params=["onnxruntime", "onnxkit"])
def rt(request):
    """The inference module under test: onnxruntime, or onnxkit in its place."""
    return importlib.import_module(request.param)


@pytest.fixture(scope="session")
def ort_reference():
    return importlib.import_module("onnxruntime")


def reference_outputs(model, feeds, output_names=None):
    """onnxruntime's outputs, with graph optimizations off: what every result is held to."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = model if isinstance(model, (bytes, str)) else str(model)
    session = onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    return session.run(output_names, feeds)


def assert_outputs_close(actual, expected, rtol=1e-4, atol=1e-5):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert isinstance(a, np.ndarray)
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, a.shape, e.dtype, e.shape)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def random_feeds(session, dims=None, seed=0):
    """Inputs for a session's declared inputs: symbolic dims from `dims` (default 2)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for node_arg in session.get_inputs():
        shape = [d if isinstance(d, int) else (dims or {}).get(d, 2) for d in node_arg.shape]
        if node_arg.type == "tensor(int64)":
            feeds[node_arg.name] = rng.integers(0, 10, size=shape, dtype=np.int64)
        else:
            feeds[node_arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def small_models(tmp_path):
    """A few models built here: one per dtype family the bindings convert."""
    models = {}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "add", [x], [y])
    models["add"] = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    a = helper.make_tensor_value_info("a", TensorProto.INT32, [4])
    b = helper.make_tensor_value_info("b", TensorProto.INT32, [4])
    equal = helper.make_tensor_value_info("equal", TensorProto.BOOL, [4])
    f16 = helper.make_tensor_value_info("f16", TensorProto.FLOAT16, [4])
    graph = helper.make_graph(
        [helper.make_node("Equal", ["a", "b"], ["equal"]),
         helper.make_node("Cast", ["a"], ["f16"], to=TensorProto.FLOAT16)],
        "types", [a, b], [equal, f16])
    models["types"] = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    s = helper.make_tensor_value_info("s", TensorProto.STRING, [3])
    t = helper.make_tensor_value_info("t", TensorProto.STRING, [3])
    graph = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "strings", [s], [t])
    models["strings"] = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    paths = {}
    for name, model in models.items():
        model.ir_version = 8
        onnx.checker.check_model(model)
        paths[name] = tmp_path / f"{name}.onnx"
        onnx.save(model, paths[name])
    return paths
