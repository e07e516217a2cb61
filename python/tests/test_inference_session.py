"""onnxruntime's InferenceSession API, the same script against onnxruntime and onnxkit."""

import threading

import numpy as np
import onnx
import pytest
from conftest import (TEST_MODELS, TINY_CNN, assert_outputs_close, random_feeds,
                      reference_outputs, run_cli, small_models)

MODELS = [TINY_CNN] + [TEST_MODELS / name / "model.onnx"
                       for name in ("bert_tiny", "lstm_state_tiny", "fpn_dynamic_tiny", "yolo_tiny")]


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.parent.name if p.name == "model.onnx" else p.stem)
def test_run_all_outputs_match_onnxruntime(rt, model):
    sess = rt.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feeds = random_feeds(sess, dims={"H": 64, "W": 64, "seq": 5, "sequence": 7})
    outputs = sess.run(None, feeds)
    assert [o.name for o in sess.get_outputs()] == [o.name for o in rt.InferenceSession(
        str(model)).get_outputs()]
    assert_outputs_close(outputs, reference_outputs(model, feeds), rtol=1e-3, atol=1e-4)


def test_named_outputs_in_the_order_asked(rt):
    model = TEST_MODELS / "lstm_state_tiny" / "model.onnx"
    sess = rt.InferenceSession(str(model))
    feeds = random_feeds(sess, dims={"sequence": 4})
    everything = sess.run(None, feeds)
    picked = sess.run(["cn", "output"], feeds)
    assert len(picked) == 2
    np.testing.assert_array_equal(picked[0], everything[2])
    np.testing.assert_array_equal(picked[1], everything[0])
    assert len(sess.run([], feeds)) == 3


def test_inputs_outputs_describe_the_model(rt, ort_reference):
    for model in MODELS:
        ours = rt.InferenceSession(str(model))
        theirs = ort_reference.InferenceSession(str(model))
        for mine, peer in zip(ours.get_inputs() + ours.get_outputs(),
                              theirs.get_inputs() + theirs.get_outputs()):
            assert (mine.name, mine.type, len(mine.shape)) == (peer.name, peer.type,
                                                                len(peer.shape))
            # onnxkit describes outputs as compiled: a dim the model declares as a symbol may
            # be known by then (yolo_tiny's detections: [batch, 252, 8]).
            for dim, declared in zip(mine.shape, peer.shape):
                assert dim == declared or (isinstance(declared, str) and isinstance(dim, int))
        assert len(ours.get_inputs()) == len(theirs.get_inputs())


def test_model_metadata_and_providers(rt, ort_reference, tmp_path):
    model = onnx.load(TINY_CNN)
    model.producer_name = "metadata-test"
    model.model_version = 7
    model.doc_string = "a tiny CNN"
    onnx.helper.set_model_props(model, {"author": "onnxkit", "license": "MIT"})
    path = tmp_path / "meta.onnx"
    onnx.save(model, path)
    fields = ("producer_name", "graph_name", "graph_description", "domain", "description",
              "version", "custom_metadata_map")
    for source in (str(path), model.SerializeToString(), str(TINY_CNN)):
        meta = rt.InferenceSession(source).get_modelmeta()
        peer = ort_reference.InferenceSession(source).get_modelmeta()
        assert {f: getattr(meta, f) for f in fields} == {f: getattr(peer, f) for f in fields}
    sess = rt.InferenceSession(str(TINY_CNN), providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert "CPUExecutionProvider" in rt.get_available_providers()


def test_session_from_bytes_and_pathlike(rt):
    feeds = {"input": np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)}
    by_path = rt.InferenceSession(TINY_CNN).run(None, feeds)
    by_bytes = rt.InferenceSession(TINY_CNN.read_bytes()).run(None, feeds)
    np.testing.assert_array_equal(by_path[0], by_bytes[0])


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED",
                                   "ORT_ENABLE_ALL"])
@pytest.mark.parametrize("mode", ["ORT_SEQUENTIAL", "ORT_PARALLEL"])
def test_session_options(rt, tmp_path, level, mode):
    model = TEST_MODELS / "bert_tiny" / "model.onnx"
    options = rt.SessionOptions()
    options.graph_optimization_level = getattr(rt.GraphOptimizationLevel, level)
    options.execution_mode = getattr(rt.ExecutionMode, mode)
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 2
    options.enable_mem_pattern = mode == "ORT_SEQUENTIAL"
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    sess = rt.InferenceSession(str(model), sess_options=options,
                               providers=["CPUExecutionProvider"])
    feeds = random_feeds(sess, dims={"seq": 6})
    assert_outputs_close(sess.run(None, feeds), reference_outputs(model, feeds), rtol=1e-3,
                         atol=1e-4)
    # The optimized model is written and loads again.
    assert (tmp_path / "optimized.onnx").stat().st_size > 0
    assert sess.get_session_options().graph_optimization_level == getattr(
        rt.GraphOptimizationLevel, level)


def test_run_options(rt):
    sess = rt.InferenceSession(str(TINY_CNN))
    feeds = {"input": np.ones((1, 3, 32, 32), np.float32)}
    run_options = rt.RunOptions()
    run_options.log_severity_level = 3
    run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert sess.run(None, feeds, run_options)[0].shape == (1, 10)
    run_options.terminate = True
    with pytest.raises(Exception):
        sess.run(None, feeds, run_options)


def test_io_binding(rt):
    sess = rt.InferenceSession(str(TEST_MODELS / "lstm_state_tiny" / "model.onnx"))
    feeds = random_feeds(sess, dims={"batch": 2, "sequence": 5})
    expected = sess.run(None, feeds)
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    # One output into the caller's memory, the others allocated by the run.
    hn = np.full(expected[1].shape, -1.0, dtype=np.float32)
    binding.bind_output("output")
    binding.bind_output("hn", "cpu", 0, np.float32, list(hn.shape), hn.ctypes.data)
    binding.bind_output("cn")
    sess.run_with_iobinding(binding)
    outputs = binding.copy_outputs_to_cpu()
    assert len(outputs) == 3
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hn, expected[1], rtol=1e-5, atol=1e-6)


def test_several_threads_share_one_session(rt):
    sess = rt.InferenceSession(str(TEST_MODELS / "bert_tiny" / "model.onnx"))
    feeds = [random_feeds(sess, dims={"seq": 3 + i % 4}, seed=i) for i in range(8)]
    expected = [sess.run(None, f) for f in feeds]
    failures = []

    def worker(index):
        try:
            for round_ in range(10):
                which = (index + round_) % len(feeds)
                got = sess.run(None, feeds[which])
                for g, e in zip(got, expected[which]):
                    np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        except Exception as error:  # reported on the main thread
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]


def test_gil_is_released_during_run(rt):
    # A model that runs long enough for another Python thread to make progress meanwhile.
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [512, 512])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [512, 512])
    nodes, name = [], "x"
    for i in range(40):
        nodes.append(onnx.helper.make_node("MatMul", [name, "x"], [f"m{i}"]))
        nodes.append(onnx.helper.make_node("Tanh", [f"m{i}"], [f"t{i}"]))
        name = f"t{i}"
    nodes.append(onnx.helper.make_node("Identity", [name], ["y"]))
    model = onnx.helper.make_model(onnx.helper.make_graph(nodes, "chain", [x], [y]),
                                   opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = rt.SessionOptions()
    options.intra_op_num_threads = 1
    sess = rt.InferenceSession(model.SerializeToString(), options)
    feeds = {"x": np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32) / 32}
    progress = {"count": 0, "during": 0}
    running = threading.Event()
    done = threading.Event()

    def count():
        while not done.is_set():
            progress["count"] += 1
            if running.is_set():
                progress["during"] += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        for _ in range(3):
            running.set()
            sess.run(None, feeds)
            running.clear()
    finally:
        done.set()
        counter.join()
    # With the GIL held for the whole run, the counter could only move at the run's edges.
    assert progress["during"] > 1000, progress


def test_element_types(rt, tmp_path):
    paths = small_models(tmp_path)
    sess = rt.InferenceSession(str(paths["types"]))
    a = np.array([1, 2, 3, 4], np.int32)
    b = np.array([1, 0, 3, 0], np.int32)
    equal, f16 = sess.run(None, {"a": a, "b": b})
    assert equal.dtype == np.bool_ and equal.tolist() == [True, False, True, False]
    assert f16.dtype == np.float16 and f16.tolist() == [1, 2, 3, 4]
    strings = rt.InferenceSession(str(paths["strings"])).run(
        None, {"s": np.array(["a", "bc", "déf"], dtype=object)})[0]
    assert strings.tolist() == ["a", "bc", "déf"]


def test_inputs_of_any_layout(rt, tmp_path):
    sess = rt.InferenceSession(str(small_models(tmp_path)["add"]))
    base = np.arange(24, dtype=np.float32).reshape(6, 4)
    layouts = [base[:, :3], base[::2, 1:], np.asfortranarray(base[:, :3])]
    if rt.__name__ == "onnxkit":
        # onnxruntime 1.31 reads a big-endian array's bytes as they are (wrong results).
        layouts.append(base[:, :3].astype(">f4"))
    for x in layouts:
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.asarray(x, np.float32) * 2)
    # Outputs are the caller's to change; the next run is not affected.
    x = np.ones((2, 3), np.float32)
    first = sess.run(None, {"x": x})[0]
    first[:] = 42
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.full((2, 3), 2, np.float32))
    np.testing.assert_array_equal(x, np.ones((2, 3), np.float32))


def test_outputs_equal_the_cli(rt, tmp_path):
    model = TEST_MODELS / "bert_tiny" / "model.onnx"
    sess = rt.InferenceSession(str(model))
    feeds = random_feeds(sess, dims={"seq": 7}, seed=3)
    args = []
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    run_cli("run", model, *args, "--output-dir", tmp_path / "out")
    for node_arg, got in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.testing.assert_allclose(got, np.load(tmp_path / "out" / f"{node_arg.name}.npy"),
                                   rtol=1e-4, atol=1e-5)


# Bad input: an exception, never a crash; onnxkit's message names the input at fault.
def _message_names(rt, error, name):
    if rt.__name__ == "onnxkit":
        assert name in str(error.value), str(error.value)


def test_wrong_dtype(rt):
    sess = rt.InferenceSession(str(TINY_CNN))
    with pytest.raises(Exception) as error:
        sess.run(None, {"input": np.ones((1, 3, 32, 32), np.float64)})
    _message_names(rt, error, "input")


def test_wrong_shape(rt):
    sess = rt.InferenceSession(str(TINY_CNN))
    for shape in [(1, 3, 32), (1, 4, 32, 32)]:
        with pytest.raises(Exception) as error:
            sess.run(None, {"input": np.ones(shape, np.float32)})
        _message_names(rt, error, "input")


def test_missing_and_unknown_inputs_and_outputs(rt):
    sess = rt.InferenceSession(str(TEST_MODELS / "bert_tiny" / "model.onnx"))
    ids = np.ones((1, 4), np.int64)
    with pytest.raises(Exception) as error:
        sess.run(None, {"input_ids": ids})
    _message_names(rt, error, "attention_mask")
    with pytest.raises(Exception) as error:
        sess.run(None, {"input_ids": ids, "attention_mask": ids, "no_such_input": ids})
    _message_names(rt, error, "no_such_input")
    with pytest.raises(Exception) as error:
        sess.run(["no_such_output"], {"input_ids": ids, "attention_mask": ids})
    _message_names(rt, error, "no_such_output")
    with pytest.raises(Exception):
        sess.run(None, [ids, ids])
    with pytest.raises(Exception) as error:
        sess.run(None, {"input_ids": np.array([["a", "b"]]), "attention_mask": ids})
    _message_names(rt, error, "input_ids")


def test_bad_models(rt, tmp_path):
    with pytest.raises(Exception) as error:
        rt.InferenceSession(str(tmp_path / "missing.onnx"))
    _message_names(rt, error, "missing.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model at all" * 10)
    with pytest.raises(Exception) as error:
        rt.InferenceSession(str(garbage))
    _message_names(rt, error, "garbage.onnx")
    with pytest.raises(Exception):
        rt.InferenceSession(b"\xff\xfe\x00garbage")
    with pytest.raises(Exception):
        rt.InferenceSession(12345)
    # A node whose op does not exist.
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    graph = onnx.helper.make_graph([onnx.helper.make_node("NoSuchOp", ["x"], ["y"], name="bad")],
                                   "g", [x], [onnx.helper.make_tensor_value_info(
                                       "y", onnx.TensorProto.FLOAT, [2])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(Exception) as error:
        rt.InferenceSession(model.SerializeToString())
    _message_names(rt, error, "NoSuchOp")


def test_onnxkit_errors_are_python_exceptions():
    import onnxkit

    sess = onnxkit.InferenceSession(str(TINY_CNN))
    with pytest.raises(onnxkit.OnnxkitError, match="input 'input'"):
        sess.run(None, {"input": np.ones((1, 3, 32, 32), np.int64)})
    with pytest.raises(onnxkit.OnnxkitError):
        onnxkit.InferenceSession(str(TINY_CNN) + ".missing")
    assert issubclass(onnxkit.OnnxkitError, RuntimeError)
    options = onnxkit.SessionOptions()
    options.graph_optimization_level = 5
    with pytest.raises(ValueError, match="graph_optimization_level"):
        onnxkit.InferenceSession(str(TINY_CNN), options)
    with pytest.raises(AttributeError):
        options.no_such_option = 1
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        sess = onnxkit.InferenceSession(str(TINY_CNN), providers=["CUDAExecutionProvider",
                                                                 "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_outputs_are_handed_over_without_a_copy(tmp_path):
    import onnxkit

    sess = onnxkit.InferenceSession(str(small_models(tmp_path)["add"]))
    (y,) = sess.run(None, {"x": np.ones((4, 3), np.float32)})
    # The array's memory is the run's output tensor, kept alive by a capsule.
    assert type(y.base).__name__ == "PyCapsule"
    assert y.flags.writeable and y.flags.c_contiguous
