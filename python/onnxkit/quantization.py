"""onnxruntime.quantization's ``quantize_dynamic`` / ``quantize_static`` over onnxkit::quantize
(include/onnxkit/quantize.h).

    from onnxkit.quantization import CalibrationDataReader, QuantType, quantize_static
    quantize_static("model.onnx", "model.int8.onnx", reader, weight_type=QuantType.QInt8)

The quantized model is standard ONNX (QuantizeLinear / DequantizeLinear, DynamicQuantizeLinear
+ MatMulInteger / ConvInteger, QLinearConv / QLinearMatMul) that onnxruntime loads too.
docs/python.md lists the arguments supported and how they differ from onnxruntime's.
"""

import abc
import enum
import logging
import os
import tempfile

import onnx

from . import _onnxkit

__all__ = [
    "CalibrationDataReader",
    "CalibrationMethod",
    "QuantFormat",
    "QuantType",
    "quantize_dynamic",
    "quantize_static",
]

_logger = logging.getLogger("onnxkit.quantization")

# Above this size a ModelProto goes to onnxkit through a file with external data rather than
# one serialized message (which cannot exceed 2 GiB).
_IN_MEMORY_LIMIT = 3 << 29  # 1.5 GiB


class QuantType(enum.Enum):
    """onnxruntime's quantized element types; onnxkit quantizes to QInt8 and QUInt8."""

    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6

    def __str__(self):
        return self.name

    @staticmethod
    def from_string(t):
        try:
            return QuantType[t]
        except KeyError:
            raise ValueError(f"unknown QuantType '{t}'") from None


class QuantFormat(enum.Enum):
    """QOperator: QLinearConv / QLinearMatMul where ONNX has an int8 op; QDQ: QuantizeLinear /
    DequantizeLinear pairs around float ops."""

    QOperator = 0
    QDQ = 1

    def __str__(self):
        return self.name

    @staticmethod
    def from_string(format):
        try:
            return QuantFormat[format]
        except KeyError:
            raise ValueError(f"unknown QuantFormat '{format}'") from None


class CalibrationMethod(enum.Enum):
    """How an activation's range comes from the calibration data; onnxkit has MinMax, Entropy
    and Percentile."""

    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """Calibration samples for quantize_static: ``get_next()`` returns one sample, a dict
    ``{input name: numpy array}``, or None when there are no more. Any object with a
    ``get_next`` method is accepted (onnxruntime's readers included)."""

    @classmethod
    def __subclasshook__(cls, subclass):
        return (hasattr(subclass, "get_next") and callable(subclass.get_next)) or NotImplemented

    @abc.abstractmethod
    def get_next(self) -> dict:
        """The next sample's inputs ``{name: numpy array}``, or None after the last."""
        raise NotImplementedError

    def rewind(self):
        """Starts the samples again from the first. quantize_static reads the samples once and
        does not call it; readers that are read more than once implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rewind()")

    def __iter__(self):
        return self

    def __next__(self):
        result = self.get_next()
        if result is None:
            raise StopIteration
        return result

    def __len__(self):
        raise NotImplementedError

    def set_range(self, start_index: int, end_index: int):
        raise NotImplementedError


def _member(value, enum_type, argument):
    """An onnxkit enum member from itself, onnxruntime's member of the same name, or its name."""
    if isinstance(value, enum_type):
        return value
    name = value if isinstance(value, str) else getattr(value, "name", None)
    if name in enum_type.__members__:
        return enum_type[name]
    raise TypeError(f"{argument}: expected a {enum_type.__name__}, got {value!r}")


_QUANT_TYPES = {QuantType.QInt8: "int8", QuantType.QUInt8: "uint8"}


def _quant_type(value, argument):
    member = _member(value, QuantType, argument)
    if member not in _QUANT_TYPES:
        raise ValueError(f"{argument}={member}: onnxkit quantizes to QuantType.QInt8 or "
                         f"QuantType.QUInt8 only")
    return _QUANT_TYPES[member]


# extra_options keys onnxkit has an option for: key -> (option, conversion).
_EXTRA_OPTIONS = {
    "ActivationSymmetric": ("symmetric_activations", bool),
    "WeightSymmetric": ("symmetric_weights", bool),
    "CalibPercentile": ("percentile", float),
}
# extra_options keys onnxkit has no switch for, with the value that is onnxkit's behaviour
# (onnxruntime's default where they agree): that value is accepted, any other is an error.
_FIXED_EXTRA_OPTIONS = {
    "EnableSubgraph": False,
    "ForceQuantizeNoInputCheck": False,
    "AddQDQPairToWeight": False,
    "DedicatedQDQPair": False,
    "OpTypesToExcludeOutputQuantization": [],
    "QDQOpTypePerChannelSupportToAxis": {},
    "CalibTensorRangeSymmetric": False,
    "CalibStridedMinMax": None,
    "CalibMovingAverage": False,
    "CalibMaxIntermediateOutputs": None,
    "SmoothQuant": False,
    "UseQDQContribOps": False,
    "MinimumRealRange": None,
    "TensorQuantOverrides": {},
    "QDQKeepRemovableActivations": False,
    "QDQDisableWeightAdjustForInt32Bias": False,
    "ActivationRestrictedAsymmetric": False,
    "extra.Sigmoid.nnapi": False,
}
# Keys whose value only tunes an option whose fixed value above turns it off.
_IGNORED_WITH = {"CalibMovingAverageConstant": "CalibMovingAverage",
                 "SmoothQuantAlpha": "SmoothQuant", "SmoothQuantFolding": "SmoothQuant"}


def _extra_options(extra_options, options, mode):
    fixed = dict(_FIXED_EXTRA_OPTIONS)
    # Dynamic mode quantizes MatMuls whose B is a constant weight; static mode any MatMul
    # (onnxruntime's defaults for each mode).
    fixed["MatMulConstBOnly"] = mode == "dynamic"
    for key, value in (extra_options or {}).items():
        if key in _EXTRA_OPTIONS:
            option, convert = _EXTRA_OPTIONS[key]
            options[option] = convert(value)
        elif key in fixed:
            if value != fixed[key] and not (value is False and fixed[key] is None):
                raise ValueError(f"extra_options['{key}']={value!r}: onnxkit does not support "
                                 f"it (it behaves as {key}={fixed[key]!r})")
        elif key in _IGNORED_WITH:
            continue
        else:
            raise ValueError(f"extra_options['{key}']: not an option onnxkit knows "
                             f"(supported: {', '.join(sorted(_EXTRA_OPTIONS))}, and onnxruntime's "
                             f"other keys at the value onnxkit behaves as)")


def _names(values, argument):
    if values is None:
        return []
    if callable(values):
        raise TypeError(f"{argument}: onnxkit takes a list of node names, not a function")
    if isinstance(values, str):
        raise TypeError(f"{argument}: expected a list of names, got the string {values!r}")
    return [str(v) for v in values]


def _common_options(mode, op_types_to_quantize, per_channel, reduce_range, weight_type,
                    nodes_to_quantize, nodes_to_exclude, extra_options):
    options = {
        "mode": mode,
        "op_types": _names(op_types_to_quantize, "op_types_to_quantize"),
        "per_channel": bool(per_channel),
        "reduce_range": bool(reduce_range),
        "weight_type": _quant_type(weight_type, "weight_type"),
        "nodes_to_quantize": _names(nodes_to_quantize, "nodes_to_quantize"),
        "nodes_to_exclude": _names(nodes_to_exclude, "nodes_to_exclude"),
    }
    _extra_options(extra_options, options, mode)
    return options


def _run(model_input, model_output, options, reader, use_external_data_format):
    if not isinstance(model_output, (str, os.PathLike)):
        raise TypeError(f"model_output must be a path, not {type(model_output).__name__}")
    output = os.fspath(model_output)
    with tempfile.TemporaryDirectory(prefix="onnxkit_quantize_") as folder:
        if isinstance(model_input, (str, os.PathLike)):
            source = os.fspath(model_input)
            if not os.path.isfile(source):
                raise FileNotFoundError(f"{source}: no such model file")
        elif isinstance(model_input, onnx.ModelProto):
            if model_input.ByteSize() >= _IN_MEMORY_LIMIT:
                copy = onnx.ModelProto()  # saving with external data rewrites the message
                copy.CopyFrom(model_input)
                source = os.path.join(folder, "input.onnx")
                onnx.save_model(copy, source, save_as_external_data=True,
                                location="input.onnx.data")
                del copy
            else:
                source = model_input.SerializeToString()
        else:
            raise TypeError(f"model_input must be a path or an onnx.ModelProto, "
                            f"not {type(model_input).__name__}")
        report = _onnxkit.quantize(source, output, options, reader,
                                   bool(use_external_data_format))
    for warning in report["warnings"]:
        _logger.warning("%s", warning)
    counts = ", ".join(f"{op}: {n}" for op, n in sorted(report["quantized"].items()))
    _logger.info("quantized %s", counts or "no node")


def quantize_dynamic(model_input, model_output, op_types_to_quantize=None, per_channel=False,
                     reduce_range=False, weight_type=QuantType.QInt8, nodes_to_quantize=None,
                     nodes_to_exclude=None, use_external_data_format=False, extra_options=None):
    """Quantizes ``model_input`` (a path or an onnx.ModelProto) and saves it to
    ``model_output``: weights to ``weight_type`` ahead, activations to uint8 at run time
    (DynamicQuantizeLinear + MatMulInteger / ConvInteger; a Gather on a constant table
    becomes a uint8 table + DequantizeLinear). ``op_types_to_quantize``: MatMul, Gemm, Conv,
    Gather (default MatMul, Gemm and Gather)."""
    options = _common_options("dynamic", op_types_to_quantize, per_channel, reduce_range,
                              weight_type, nodes_to_quantize, nodes_to_exclude, extra_options)
    _run(model_input, model_output, options, None, use_external_data_format)


def quantize_static(model_input, model_output, calibration_data_reader=None,
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=None, per_channel=False,
                    reduce_range=False, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, nodes_to_quantize=None, nodes_to_exclude=None,
                    use_external_data_format=False, calibrate_method=CalibrationMethod.MinMax,
                    calibration_providers=None, extra_options=None, calibration_cache_path=None):
    """Quantizes ``model_input`` (a path or an onnx.ModelProto) with activation ranges
    calibrated on the samples of ``calibration_data_reader`` and saves it to ``model_output``.
    Without a reader onnxkit calibrates on 8 generated inputs (onnxruntime requires one).
    ``calibration_providers`` is accepted: calibration runs on onnxkit's CPU kernels."""
    if calibration_cache_path is not None:
        raise ValueError("calibration_cache_path: onnxkit does not read or write calibration "
                         "caches; pass calibration_data_reader")
    if calibration_data_reader is not None and not isinstance(calibration_data_reader,
                                                              CalibrationDataReader):
        raise TypeError(f"calibration_data_reader: expected an object with get_next(), got "
                        f"{type(calibration_data_reader).__name__}")
    options = _common_options("static", op_types_to_quantize, per_channel, reduce_range,
                              weight_type, nodes_to_quantize, nodes_to_exclude, extra_options)
    method = _member(calibrate_method, CalibrationMethod, "calibrate_method")
    if method is CalibrationMethod.Distribution:
        raise ValueError("calibrate_method=CalibrationMethod.Distribution: onnxkit calibrates "
                         "with MinMax, Entropy or Percentile")
    options.update({
        "format": "qoperator" if _member(quant_format, QuantFormat, "quant_format")
                  is QuantFormat.QOperator else "qdq",
        "activation_type": _quant_type(activation_type, "activation_type"),
        "calibration_method": method.name.lower(),
    })
    _run(model_input, model_output, options, calibration_data_reader, use_external_data_format)
