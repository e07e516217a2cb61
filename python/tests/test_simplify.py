"""onnxsim's simplify API, the same script against onnxsim and onnxkit."""

import collections
import importlib

import numpy as np
import onnx
import pytest
from conftest import TEST_MODELS, TINY_CNN, assert_outputs_close, reference_outputs, run_cli


@pytest.fixture(params=["onnxsim", "onnxkit"])
def sim(request):
    """The simplifier under test: onnxsim, or onnxkit in its place."""
    return importlib.import_module(request.param)


def op_counts(model):
    return collections.Counter(node.op_type for node in model.graph.node)


def feeds_for(model, shapes, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name in {i.name for i in model.graph.initializer}:
            continue
        elem = value.type.tensor_type.elem_type
        shape = shapes[value.name]
        if elem == onnx.TensorProto.INT64:
            feeds[value.name] = rng.integers(0, 10, size=shape, dtype=np.int64)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def assert_same_function(original, simplified, shapes):
    feeds = feeds_for(original, shapes)
    assert_outputs_close(reference_outputs(simplified.SerializeToString(), feeds),
                         reference_outputs(original.SerializeToString(), feeds),
                         rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["convnet_bn_tiny", "bert_tiny", "vit_tiny", "gpt2_tiny"])
def test_simplify_model_proto(sim, name):
    original = onnx.load(TEST_MODELS / name / "model.onnx")
    model_simp, check = sim.simplify(onnx.load(TEST_MODELS / name / "model.onnx"))
    assert check is True
    assert isinstance(model_simp, onnx.ModelProto)
    onnx.checker.check_model(model_simp)
    assert len(model_simp.graph.node) < len(original.graph.node)
    shapes = {"input": [2, 3, 32, 32], "input_ids": [2, 5], "attention_mask": [2, 5]}
    assert_same_function(original, model_simp, shapes)


def test_simplify_path_and_bn_fusion(sim):
    model_simp, check = sim.simplify(str(TINY_CNN))
    assert check
    original = onnx.load(TINY_CNN)
    assert op_counts(original)["BatchNormalization"] > 0
    assert op_counts(model_simp)["BatchNormalization"] == 0
    kept, check = sim.simplify(str(TINY_CNN), skip_fuse_bn=True)
    assert check and op_counts(kept)["BatchNormalization"] == op_counts(original)[
        "BatchNormalization"]
    assert_same_function(original, model_simp, {"input": [1, 3, 32, 32]})


def test_overwrite_and_test_input_shapes(sim):
    model = onnx.load(TEST_MODELS / "fpn_dynamic_tiny" / "model.onnx")
    fixed, check = sim.simplify(model, overwrite_input_shapes={"x": [1, 3, 64, 64]})
    assert check
    dims = [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 64, 64]
    assert_same_function(model, fixed, {"x": [1, 3, 64, 64]})
    dynamic, check = sim.simplify(model, test_input_shapes={"x": [1, 3, 32, 64]})
    assert check
    assert dynamic.graph.input[0].type.tensor_type.shape.dim[2].dim_param == "H"


def test_options(sim):
    model = onnx.load(TEST_MODELS / "lstm_state_tiny" / "model.onnx")
    dropped, check = sim.simplify(model, unused_output=["cn"])
    assert check and [o.name for o in dropped.graph.output] == ["output", "hn"]
    untouched, check = sim.simplify(model, perform_optimization=False, skip_constant_folding=True,
                                    skip_shape_inference=True, include_subgraph=False,
                                    mutable_initializer=True, tensor_size_threshold="100MB")
    assert check
    assert_same_function(model, untouched, {"input": [2, 6], "h": [2, 2, 16], "c": [2, 2, 16]})
    skipped, check = sim.simplify(model, skipped_optimizers=["fuse_bn_into_conv",
                                                             "eliminate_identity"], check_n=2,
                                  test_input_shapes={"input": [1, 3], "h": [2, 1, 16],
                                                     "c": [2, 1, 16]})
    assert check
    rng = np.random.default_rng(5)
    data = {"input": rng.standard_normal((1, 3)).astype(np.float32),
            "h": rng.standard_normal((2, 1, 16)).astype(np.float32),
            "c": rng.standard_normal((2, 1, 16)).astype(np.float32)}
    given, check = sim.simplify(model, input_data=data, check_n=1)
    assert check
    assert_outputs_close(reference_outputs(given.SerializeToString(), data),
                         reference_outputs(model.SerializeToString(), data), atol=1e-4)


def test_equal_to_the_cli(tmp_path):
    import onnxkit

    name = "convnet_bn_tiny"
    path = TEST_MODELS / name / "model.onnx"
    run_cli("simplify", path, tmp_path / "cli.onnx")
    from_cli = onnx.load(tmp_path / "cli.onnx")
    from_python, check = onnxkit.simplify(onnx.load(path))
    assert check
    assert from_python.graph == from_cli.graph
    from_path, _ = onnxkit.simplify(str(path), overwrite_input_shapes=["input:1,3,32,32"])
    run_cli("simplify", path, tmp_path / "cli_shape.onnx", "--overwrite-input-shape",
            "input:1,3,32,32")
    assert from_path.graph == onnx.load(tmp_path / "cli_shape.onnx").graph


def test_check_n_auto(tmp_path):
    """check_n="auto" (the CLI's default) checks a cheap model and, over its budget, warns
    that it skipped the check, as the CLI says it."""
    import warnings

    import onnxkit

    model = onnx.load(TINY_CNN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the check ran
        checked, check = onnxkit.simplify(model, check_n="auto")
    assert check
    # Batch 1024 in the check's shapes: over auto's budget.
    big = {"input": [1024, 3, 32, 32]}
    with pytest.warns(UserWarning, match=r"check skipped: .*--check-n 1 runs it"):
        skipped, check = onnxkit.simplify(model, check_n="auto", test_input_shapes=big)
    assert check and skipped.graph == checked.graph
    run_cli("simplify", TINY_CNN, tmp_path / "cli.onnx", "--test-input-shape", "input:1024,3,32,32")
    assert onnx.load(tmp_path / "cli.onnx").graph == skipped.graph
    for bad in (-1, "often", True):
        with pytest.raises(ValueError, match="check_n"):
            onnxkit.simplify(model, check_n=bad)


def test_large_models_go_through_files(monkeypatch):
    """Models above the in-memory limit (2 GiB in practice) travel as files with external
    data; the limit is lowered here so a small model takes that path."""
    import onnxkit.simplifier as module

    monkeypatch.setattr(module, "_IN_MEMORY_LIMIT", 1024)
    original = onnx.load(TEST_MODELS / "convnet_bn_tiny" / "model.onnx")
    by_proto, check = module.simplify(original)
    assert check
    by_path, check = module.simplify(str(TEST_MODELS / "convnet_bn_tiny" / "model.onnx"))
    assert check
    assert original == onnx.load(TEST_MODELS / "convnet_bn_tiny" / "model.onnx")
    for model in (by_proto, by_path):
        assert all(not t.external_data for t in model.graph.initializer)
        assert_same_function(original, model, {"input": [1, 3, 32, 32]})


def test_bad_input(sim, tmp_path):
    with pytest.raises(Exception):
        sim.simplify(str(tmp_path / "missing.onnx"))
    with pytest.raises(Exception):
        sim.simplify(12345)
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
                                   "g", [x], [y])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(Exception) as error:
        sim.simplify(model)
    if sim.__name__ == "onnxkit":
        assert "nowhere" in str(error.value)
        with pytest.raises(ValueError, match="tensor_size_threshold"):
            sim.simplify(onnx.load(TINY_CNN), tensor_size_threshold="lots")
        with pytest.raises(Exception, match="no_such_output"):
            sim.simplify(onnx.load(TINY_CNN), unused_output=["no_such_output"])
        with pytest.raises(Exception, match="input 'input' must be float"):
            sim.simplify(onnx.load(TINY_CNN), input_data={"input": np.ones((1, 3, 32, 32))})
