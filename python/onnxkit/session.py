"""onnxruntime's inference API over onnxkit's Session (CPU only).

The names and behaviour follow ``onnxruntime`` so that a script runs unchanged after
``import onnxkit as ort``; docs/python.md lists what differs.
"""

import enum
import os
import re
import warnings

import numpy as np

from . import _onnxkit
from ._onnxkit import OnnxkitError

_CPU = "CPUExecutionProvider"


class GraphOptimizationLevel(enum.IntEnum):
    """How much a session rewrites the graph (onnxruntime's values)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


# onnxkit's levels (include/onnxkit/optimization.h) for onnxruntime's.
_LEVEL_NAMES = {
    GraphOptimizationLevel.ORT_DISABLE_ALL: "none",
    GraphOptimizationLevel.ORT_ENABLE_BASIC: "basic",
    GraphOptimizationLevel.ORT_ENABLE_EXTENDED: "extended",
    GraphOptimizationLevel.ORT_ENABLE_LAYOUT: "layout",
    GraphOptimizationLevel.ORT_ENABLE_ALL: "all",
}


class ExecutionMode(enum.IntEnum):
    """Nodes one after another, or independent branches at the same time."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """How an InferenceSession prepares and runs a model.

    Honoured: intra_op_num_threads, inter_op_num_threads, execution_mode,
    graph_optimization_level, optimized_model_filepath, enable_mem_pattern,
    register_custom_ops_library (onnxkit's custom op ABI). Accepted with no
    effect (onnxkit has no such switch): log_severity_level, log_verbosity_level, logid,
    enable_cpu_mem_arena, enable_mem_reuse, use_deterministic_compute, enable_profiling
    (warns), profile_file_prefix, and config entries.
    """

    __slots__ = (
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "graph_optimization_level",
        "optimized_model_filepath",
        "enable_mem_pattern",
        "enable_mem_reuse",
        "enable_cpu_mem_arena",
        "enable_profiling",
        "profile_file_prefix",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "use_deterministic_compute",
        "_config",
        "_custom_op_libraries",
    )

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.optimized_model_filepath = ""
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.use_deterministic_compute = False
        self._config = {}
        self._custom_op_libraries = []

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise OnnxkitError(f"SessionOptions config entry '{key}' is not set")
        return self._config[key]

    def register_custom_ops_library(self, library_path):
        """Loads onnxkit custom op library `library_path` (include/onnxkit/custom_op.h; not
        onnxruntime's custom op ABI) into sessions made with these options."""
        self._custom_op_libraries.append(os.fspath(library_path))

    def _native(self):
        config = _onnxkit.SessionConfig()
        try:
            config.level = _LEVEL_NAMES[GraphOptimizationLevel(self.graph_optimization_level)]
        except ValueError:
            raise ValueError(
                f"graph_optimization_level {self.graph_optimization_level!r} is not a "
                "GraphOptimizationLevel"
            ) from None
        for name in ("intra_op_num_threads", "inter_op_num_threads"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"SessionOptions.{name} must be an int >= 0, got {value!r}")
        config.intra_op_threads = int(self.intra_op_num_threads)
        config.inter_op_threads = int(self.inter_op_num_threads)
        config.parallel_execution = ExecutionMode(self.execution_mode) == ExecutionMode.ORT_PARALLEL
        config.memory_planning = bool(self.enable_mem_pattern)
        config.optimized_model_path = os.fspath(self.optimized_model_filepath or "")
        config.custom_op_libraries = list(self._custom_op_libraries)
        return config


class RunOptions:
    """Per-run options. ``terminate = True`` makes run() fail instead of running; the log
    settings and config entries are accepted with no effect."""

    __slots__ = (
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "terminate",
        "only_execute_path_to_fetches",
        "_config",
    )

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        if key not in self._config:
            raise OnnxkitError(f"RunOptions config entry '{key}' is not set")
        return self._config[key]


# "float[batch,3]" -> "tensor(float)", "seq(float[2])" -> "seq(tensor(float))": onnxruntime's
# spelling of a value's type.
_ELEMENT = re.compile(r"\b([a-z][a-z0-9]*)\b(\[[^\]]*\])?(?!\()")


def _ort_type(is_tensor, dtype, text):
    if is_tensor:
        return f"tensor({dtype})"
    text = _ELEMENT.sub(lambda m: f"tensor({m.group(1)})", text.replace("sparse(", "sparse_tensor("))
    # A map's key and a sparse tensor's element are bare: map(int64,tensor(float)),
    # sparse_tensor(float).
    text = re.sub(r"sparse_tensor\(tensor\((\w+)\)\)", r"sparse_tensor(\1)", text)
    return re.sub(r"map\(tensor\((\w+)\)", r"map(\1", text)


class NodeArg:
    """A graph input or output: ``name``, ``type`` ('tensor(float)') and ``shape`` (ints,
    symbol names, None for a dim nothing is known about)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name, is_tensor, dtype, dims, text):
        self.name = name
        self.type = _ort_type(is_tensor, dtype, text)
        self.shape = dims if dims is not None else []

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What the model says about itself (onnxruntime's ModelMetadata)."""

    __slots__ = (
        "producer_name",
        "graph_name",
        "graph_description",
        "domain",
        "description",
        "version",
        "custom_metadata_map",
    )

    def __init__(self, model):
        self.producer_name = model.producer_name
        self.graph_name = model.graph.name
        self.graph_description = model.graph.doc_string
        self.domain = model.domain
        self.description = model.doc_string
        # onnxruntime reports an unset model_version as the largest int64.
        self.version = model.model_version if model.HasField("model_version") else 2**63 - 1
        self.custom_metadata_map = {p.key: p.value for p in model.metadata_props}


def get_available_providers():
    return [_CPU]


def get_all_providers():
    return [_CPU]


def get_device():
    return "CPU"


def _check_providers(providers):
    """onnxkit runs on the CPU: other providers are warned about and skipped, as
    onnxruntime does for a provider its build lacks."""
    for entry in providers or []:
        name = entry[0] if isinstance(entry, (tuple, list)) else entry
        if name != _CPU:
            warnings.warn(
                f"Specified provider '{name}' is not in available provider names."
                f"Available providers: '{_CPU}'",
                stacklevel=3,
            )


def _numpy_element_type(element_type):
    """The ONNX element type code of a numpy dtype (for bound output memory)."""
    codes = {
        "float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
        "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13,
        "complex64": 14, "complex128": 15,
    }
    name = np.dtype(element_type).name
    if name not in codes:
        raise TypeError(f"element type {name} cannot be bound to output memory")
    return codes[name]


class InferenceSession:
    """A model compiled for running: ``InferenceSession(path_or_bytes, sess_options=None,
    providers=None)``. ``run`` may be called from several threads at once; the GIL is
    released while the model runs."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        if isinstance(path_or_bytes, (str, os.PathLike)):
            source = os.fspath(path_or_bytes)
            self._model_path = source
            self._model_bytes = None
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            source = bytes(path_or_bytes)
            self._model_path = None
            self._model_bytes = source
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        if self._sess_options.enable_profiling:
            warnings.warn("onnxkit: SessionOptions.enable_profiling is not supported; "
                          "use `onnxkit bench --profile`", stacklevel=2)
        _check_providers(providers)
        self._sess = _onnxkit.Session(source, self._sess_options._native())
        self._inputs = [NodeArg(*info) for info in self._sess.inputs()]
        self._outputs = [NodeArg(*info) for info in self._sess.outputs()]
        self._meta = None

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all for None or []) as numpy arrays, in the order named."""
        if run_options is not None and run_options.terminate:
            raise OnnxkitError("Exiting due to terminate flag being set to true.")
        return self._sess.run(output_names, input_feed)

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_modelmeta(self):
        if self._meta is None:
            import onnx

            if self._model_path is not None:
                model = onnx.load(self._model_path, load_external_data=False)
            else:
                model = onnx.load_from_string(self._model_bytes)
            self._meta = ModelMetadata(model)
        return self._meta

    def get_providers(self):
        return [_CPU]

    def get_provider_options(self):
        return {_CPU: {}}

    def get_session_options(self):
        return self._sess_options

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        if run_options is not None and run_options.terminate:
            raise OnnxkitError("Exiting due to terminate flag being set to true.")
        iobinding._run()


class IOBinding:
    """Inputs and outputs bound ahead of a run (CPU memory only). Outputs bound with a
    buffer_ptr are written into that memory; the others are allocated by the run."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._output_names = []
        self._bound = {}
        self._results = None

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _require_cpu(device_type)
        dtype = np.dtype(element_type)
        count = int(np.prod(shape, dtype=np.int64))
        memory = (np.ctypeslib.ctypes.c_char * (count * dtype.itemsize)).from_address(buffer_ptr)
        self._inputs[name] = np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        _require_cpu(device_type)
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                raise ValueError(f"bind_output '{name}': buffer_ptr needs element_type and shape")
            self._bound[name] = (_numpy_element_type(element_type), [int(d) for d in shape],
                                 int(buffer_ptr))
        else:
            self._bound.pop(name, None)
        if name not in self._output_names:
            self._output_names.append(name)

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._output_names = []
        self._bound = {}
        self._results = None

    def synchronize_inputs(self):
        """CPU memory needs no synchronization."""

    def synchronize_outputs(self):
        """CPU memory needs no synchronization."""

    def get_outputs(self):
        """The outputs of the last run as numpy arrays (onnxruntime returns OrtValues)."""
        return self.copy_outputs_to_cpu()

    def copy_outputs_to_cpu(self):
        if self._results is None:
            raise OnnxkitError("IOBinding: no outputs yet (call run_with_iobinding first)")
        names = self._output_names or [o.name for o in self._session._outputs]
        return [np.array(r, copy=True) if n in self._bound else r
                for n, r in zip(names, self._results)]

    def _run(self):
        self._results = self._session._sess.run(self._output_names or None, self._inputs,
                                                self._bound)


def _require_cpu(device_type):
    if str(device_type).lower() != "cpu":
        raise OnnxkitError(f"onnxkit binds CPU memory only, not '{device_type}'")
