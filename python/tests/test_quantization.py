"""onnxruntime.quantization's API, the same script against onnxruntime and onnxkit: both
quantized files must load and run in onnxruntime and in onnxkit, close to the float model."""

import importlib
import logging

import numpy as np
import onnx
import onnxkit
import onnxruntime
import onnxruntime.quantization
import pytest
from conftest import TEST_MODELS
from onnx import numpy_helper


@pytest.fixture(params=["onnxruntime", "onnxkit"])
def q(request):
    """The quantization module under test: onnxruntime.quantization, or onnxkit's."""
    return importlib.import_module(f"{request.param}.quantization")


def model_path(name):
    return TEST_MODELS / name / "model.onnx"


def model_feeds(name):
    """The model's own test inputs (test_data_set_0)."""
    graph = onnx.load(model_path(name)).graph
    initializers = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in initializers]
    folder = TEST_MODELS / name / "test_data_set_0"
    return {n: numpy_helper.to_array(onnx.load_tensor(folder / f"input_{k}.pb"))
            for k, n in enumerate(names)}


def cosine(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def op_types(path):
    return {node.op_type for node in onnx.load(path).graph.node}


def run_both(path, feeds):
    """The quantized file's outputs in onnxruntime and in onnxkit."""
    theirs = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ours = onnxkit.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return theirs.run(None, feeds), ours.run(None, feeds)


def assert_close_to_float(name, quantized_path, feeds, min_cosine=0.99):
    reference = onnxruntime.InferenceSession(str(model_path(name)),
                                             providers=["CPUExecutionProvider"]).run(None, feeds)
    in_ort, in_onnxkit = run_both(quantized_path, feeds)
    for ort_out, kit_out, ref in zip(in_ort, in_onnxkit, reference):
        assert kit_out.shape == ref.shape and kit_out.dtype == ref.dtype
        assert ort_out.shape == ref.shape and ort_out.dtype == ref.dtype
        assert cosine(ort_out, ref) >= min_cosine, cosine(ort_out, ref)
        assert cosine(kit_out, ref) >= min_cosine, cosine(kit_out, ref)
        # One file, two runtimes: requantization may round a step apart here and there.
        spread = float(np.ptp(ref)) or 1.0
        assert float(np.abs(kit_out.astype(np.float64) - ort_out).max()) <= 0.05 * spread
        assert cosine(kit_out, ort_out) >= 0.999


def calibration_reader(q, feeds, samples=4, seed=0, base=None):
    """A reader of the q module's CalibrationDataReader kind: `samples` random inputs shaped
    like `feeds`; counts its get_next() calls."""

    class Reader(base or q.CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(seed)
            self.data = [{n: rng.standard_normal(v.shape).astype(v.dtype) for n, v in
                          feeds.items()} for _ in range(samples)]
            self.calls = 0
            self.position = 0

        def get_next(self):
            self.calls += 1
            if self.position == len(self.data):
                return None
            self.position += 1
            return self.data[self.position - 1]

    return Reader()


@pytest.mark.parametrize("name", ["bert_tiny", "gpt2_tiny"])
def test_quantize_dynamic(q, tmp_path, name):
    out = tmp_path / "dynamic.onnx"
    q.quantize_dynamic(model_path(name), out, weight_type=q.QuantType.QInt8)
    onnx.checker.check_model(onnx.load(out))
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= op_types(out)
    assert out.stat().st_size < model_path(name).stat().st_size
    assert_close_to_float(name, out, model_feeds(name))


def test_quantize_dynamic_model_proto_and_options(q, tmp_path):
    out = tmp_path / "dynamic.onnx"
    model = onnx.load(model_path("bert_tiny"))
    before = model.SerializeToString()
    matmuls = [n.name for n in model.graph.node if n.op_type == "MatMul"]
    q.quantize_dynamic(model, out, op_types_to_quantize=["MatMul"], per_channel=True,
                       reduce_range=True, weight_type=q.QuantType.QUInt8,
                       nodes_to_exclude=matmuls[:1])
    assert model.SerializeToString() == before  # the caller's model is not changed
    quantized = onnx.load(out)
    assert "MatMulInteger" in {n.op_type for n in quantized.graph.node}
    assert matmuls[0] in {n.name for n in quantized.graph.node if n.op_type == "MatMul"}
    uint8_weights = [i for i in quantized.graph.initializer
                     if i.data_type == onnx.TensorProto.UINT8 and len(i.dims) == 2]
    assert uint8_weights, "weight_type=QUInt8 gave no uint8 weight"
    assert_close_to_float("bert_tiny", out, model_feeds("bert_tiny"))


@pytest.mark.parametrize("config", [
    {},
    {"per_channel": True, "activation_type": "QUInt8", "calibrate_method": "Entropy"},
])
def test_quantize_static_qdq(q, tmp_path, config):
    feeds = model_feeds("convnet_bn_tiny")
    reader = calibration_reader(q, feeds)
    kwargs = dict(config)
    if "activation_type" in kwargs:
        kwargs["activation_type"] = q.QuantType[kwargs["activation_type"]]
    if "calibrate_method" in kwargs:
        kwargs["calibrate_method"] = q.CalibrationMethod[kwargs["calibrate_method"]]
    out = tmp_path / "static.onnx"
    q.quantize_static(model_path("convnet_bn_tiny"), out, reader,
                      quant_format=q.QuantFormat.QDQ, weight_type=q.QuantType.QInt8, **kwargs)
    assert reader.position == 4 and reader.calls == 5  # every sample, then None
    onnx.checker.check_model(onnx.load(out))
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= op_types(out)
    assert_close_to_float("convnet_bn_tiny", out, feeds)


def test_quantize_static_qoperator(q, tmp_path):
    feeds = model_feeds("convnet_bn_tiny")
    out = tmp_path / "static.onnx"
    q.quantize_static(str(model_path("convnet_bn_tiny")), str(out), calibration_reader(q, feeds),
                      quant_format=q.QuantFormat.QOperator, activation_type=q.QuantType.QUInt8)
    assert "QLinearConv" in op_types(out)
    contrib = {n.op_type for n in onnx.load(out).graph.node if n.domain == "com.microsoft"}
    if not contrib:
        assert_close_to_float("convnet_bn_tiny", out, feeds)
        return
    # onnxruntime's QOperator files hold its contrib ops (QLinearAdd, QLinearGlobalAveragePool,
    # QGemm, ...): onnxkit runs them as onnxruntime does, within one output quantization step.
    assert q.__name__.startswith("onnxruntime")
    model = onnx.load(out)
    producer = {o: n for n in model.graph.node for o in n.output}[model.graph.output[0].name]
    assert producer.op_type == "DequantizeLinear"
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    step = float(np.max(inits[producer.input[1]]))
    expected = onnxruntime.InferenceSession(str(out)).run(None, feeds)[0]
    got = onnxkit.InferenceSession(str(out)).run(None, feeds)[0]
    assert np.abs(got - expected).max() <= step + 1e-6
    reference = onnxruntime.InferenceSession(str(model_path("convnet_bn_tiny"))).run(None, feeds)
    quantized = onnxruntime.InferenceSession(str(out)).run(None, feeds)
    assert cosine(quantized[0], reference[0]) >= 0.99


def test_bad_reader_names_the_input(q, tmp_path):
    feeds = model_feeds("convnet_bn_tiny")
    wrong_name = calibration_reader(q, {"images": feeds["input"]})
    with pytest.raises(Exception) as error:
        q.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "a.onnx", wrong_name)
    if q.__name__.startswith("onnxkit"):
        assert isinstance(error.value, onnxkit.OnnxkitError)
        assert "'images' is not an input of the model (inputs: input)" in str(error.value)
        assert "calibration_data_reader" in str(error.value)

    wrong_dtype = calibration_reader(q, {"input": feeds["input"].astype(np.float64)})
    with pytest.raises(Exception) as error:
        q.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "b.onnx", wrong_dtype)
    if q.__name__.startswith("onnxkit"):
        assert "input 'input' is double, the model takes float[batch,3,32,32]" in str(error.value)

    wrong_shape = calibration_reader(q, {"input": feeds["input"][:, :2]})
    with pytest.raises(Exception) as error:
        q.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "c.onnx", wrong_shape)
    if q.__name__.startswith("onnxkit"):
        assert "input 'input' has shape" in str(error.value)
    for name in "abc":
        assert not (tmp_path / f"{name}.onnx").exists()


def test_reader_exception_is_raised_as_it_was(q, tmp_path):
    class Broken(q.CalibrationDataReader):
        def get_next(self):
            raise KeyError("no more images on disk")

    with pytest.raises(KeyError, match="no more images on disk"):
        q.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "a.onnx", Broken())


def test_reader_returning_no_sample(tmp_path):
    class Empty(onnxkit.quantization.CalibrationDataReader):
        def get_next(self):
            return None

    class NotADict(onnxkit.quantization.CalibrationDataReader):
        def get_next(self):
            return [np.zeros((1, 3, 32, 32), np.float32)]

    with pytest.raises(onnxkit.OnnxkitError, match="holds no sample"):
        onnxkit.quantization.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "a.onnx",
                                             Empty())
    with pytest.raises(onnxkit.OnnxkitError, match="returned list .*expected a dict"):
        onnxkit.quantization.quantize_static(model_path("convnet_bn_tiny"), tmp_path / "a.onnx",
                                             NotADict())


def test_onnxruntime_enums_and_readers_in_onnxkit(tmp_path):
    """A script mixing imports from onnxruntime.quantization still works with onnxkit's."""
    ort_q = onnxruntime.quantization
    feeds = model_feeds("convnet_bn_tiny")
    reader = calibration_reader(ort_q, feeds)
    out = tmp_path / "static.onnx"
    onnxkit.quantization.quantize_static(
        model_path("convnet_bn_tiny"), out, reader, quant_format=ort_q.QuantFormat.QDQ,
        activation_type=ort_q.QuantType.QUInt8, calibrate_method=ort_q.CalibrationMethod.MinMax)
    assert reader.calls == 5
    assert_close_to_float("convnet_bn_tiny", out, feeds)


def test_unsupported_arguments_are_errors(tmp_path):
    kit = onnxkit.quantization
    path = model_path("bert_tiny")
    out = tmp_path / "a.onnx"
    with pytest.raises(ValueError, match="QInt16"):
        kit.quantize_dynamic(path, out, weight_type=kit.QuantType.QInt16)
    with pytest.raises(ValueError, match="Distribution"):
        kit.quantize_static(path, out, None, calibrate_method=kit.CalibrationMethod.Distribution)
    with pytest.raises(ValueError, match="calibration_cache_path"):
        kit.quantize_static(path, out, None, calibration_cache_path=tmp_path / "cache.json")
    with pytest.raises(ValueError, match="SmoothQuant"):
        kit.quantize_dynamic(path, out, extra_options={"SmoothQuant": True})
    with pytest.raises(ValueError, match="NoSuchOption"):
        kit.quantize_dynamic(path, out, extra_options={"NoSuchOption": 1})
    with pytest.raises(onnxkit.OnnxkitError, match="op type 'Attention' cannot be quantized"):
        kit.quantize_dynamic(path, out, op_types_to_quantize=["Attention"])
    with pytest.raises(TypeError, match="calibration_data_reader"):
        kit.quantize_static(path, out, [{"input_ids": np.zeros((1, 2), np.int64)}])
    assert not out.exists()
    # onnxruntime's defaults, given explicitly, are accepted.
    kit.quantize_dynamic(path, out, extra_options={"MatMulConstBOnly": True,
                                                   "EnableSubgraph": False,
                                                   "WeightSymmetric": True})
    assert "MatMulInteger" in op_types(out)


def test_never_writes_over_its_input(tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(model_path("bert_tiny").read_bytes())
    before = source.read_bytes()
    with pytest.raises(onnxkit.OnnxkitError, match="refusing to write over it"):
        onnxkit.quantization.quantize_dynamic(source, tmp_path / "." / "model.onnx")
    assert source.read_bytes() == before


def test_warnings_are_logged(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="onnxkit.quantization"):
        onnxkit.quantization.quantize_dynamic(model_path("bert_tiny"), tmp_path / "a.onnx",
                                              nodes_to_exclude=["no_such_node"])
    assert "no_such_node" in caplog.text
