"""SessionOptions.register_custom_ops_library and simplify(custom_lib=...) with the example op
library (examples/custom_op/inverse_op.c: com.microsoft::Inverse, which onnxruntime has built
in, so its outputs are the reference)."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from conftest import ROOT, reference_outputs
from onnx import TensorProto, helper

import onnxkit


@pytest.fixture(scope="module")
def inverse_library(tmp_path_factory):
    # The build's library (CTest passes it), else built here from the same source.
    if os.environ.get("ONNXKIT_INVERSE_OP_LIB"):
        return pathlib.Path(os.environ["ONNXKIT_INVERSE_OP_LIB"])
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed to build the example op library"
    library = tmp_path_factory.mktemp("custom_op") / "libinverse_op.so"
    subprocess.run([compiler, "-std=c11", "-O2", "-shared", "-fPIC", "-I", str(ROOT / "include"),
                    str(ROOT / "examples" / "custom_op" / "inverse_op.c"), "-o", str(library),
                    "-lm"], check=True)
    return library


def inverse_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 3])
    scale = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    nodes = [helper.make_node("Mul", ["x", "two"], ["scaled"]),
             helper.make_node("Inverse", ["scaled"], ["inverse"], domain="com.microsoft"),
             helper.make_node("Identity", ["inverse"], ["y"])]
    graph = helper.make_graph(nodes, "inverse", [x], [y], initializer=[scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8  # what onnxruntime 1.31 reads
    return model


def test_session_runs_the_library_op(inverse_library):
    model = inverse_model().SerializeToString()
    x = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32) + 3 * np.eye(
        3, dtype=np.float32)
    options = onnxkit.SessionOptions()
    options.register_custom_ops_library(str(inverse_library))
    (got,) = onnxkit.InferenceSession(model, options).run(None, {"x": x})
    np.testing.assert_allclose(got, reference_outputs(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_without_the_library_the_op_is_an_error():
    with pytest.raises(onnxkit.OnnxkitError, match="Inverse"):
        onnxkit.InferenceSession(inverse_model().SerializeToString())


def test_a_library_that_does_not_load_is_named(tmp_path):
    options = onnxkit.SessionOptions()
    missing = tmp_path / "libnothing.so"
    options.register_custom_ops_library(str(missing))
    with pytest.raises(onnxkit.OnnxkitError, match="libnothing.so"):
        onnxkit.InferenceSession(inverse_model().SerializeToString(), options)
    not_a_library = tmp_path / "libtext.so"
    not_a_library.write_text("not a shared object")
    options = onnxkit.SessionOptions()
    options.register_custom_ops_library(not_a_library)
    with pytest.raises(onnxkit.OnnxkitError, match="libtext.so"):
        onnxkit.InferenceSession(inverse_model().SerializeToString(), options)


def test_simplify_with_the_library(inverse_library):
    model = inverse_model()
    simplified, check = onnxkit.simplify(model, custom_lib=str(inverse_library))
    assert check
    assert "Inverse" in [n.op_type for n in simplified.graph.node]
    assert "Identity" not in [n.op_type for n in simplified.graph.node]
    x = np.eye(3, dtype=np.float32)[None].repeat(2, axis=0) * 4
    np.testing.assert_allclose(reference_outputs(simplified.SerializeToString(), {"x": x})[0],
                               reference_outputs(model.SerializeToString(), {"x": x})[0],
                               rtol=1e-5)
