"""onnxsim's ``simplify`` over onnxkit::simplify (include/onnxkit/simplify.h)."""

import os
import re
import tempfile
import warnings

import onnx

from . import _onnxkit

# onnx-optimizer's pass names (what onnxsim's skipped_optimizers names) -> the onnxkit passes
# doing that job. onnxkit's own pass names are accepted as they are; other names skip nothing,
# as in onnxsim.
_OPTIMIZER_PASSES = {
    "fuse_bn_into_conv": ["fuse_conv_bn"],
    "fuse_add_bias_into_conv": ["fuse_conv_add"],
    "fuse_matmul_add_bias_into_gemm": ["fuse_matmul_add_into_gemm"],
    "fuse_transpose_into_gemm": ["fuse_transpose_into_gemm"],
    "fuse_pad_into_conv": ["fuse_pad_into_conv"],
    "fuse_consecutive_transposes": ["merge_transposes", "cancel_transposes"],
    "fuse_consecutive_squeezes": ["merge_squeeze_unsqueeze"],
    "fuse_consecutive_unsqueezes": ["merge_squeeze_unsqueeze"],
    "fuse_consecutive_concats": ["merge_concats"],
    "fuse_consecutive_slices": ["merge_slices"],
    "fuse_consecutive_reshapes": ["merge_reshapes"],
    "eliminate_identity": ["eliminate_identity"],
    "eliminate_deadend": ["dead_code_elimination"],
    "eliminate_unused_initializer": ["remove_unused_initializers"],
    "extract_constant_to_initializer": ["constant_to_initializer"],
    "eliminate_common_subexpression": ["common_subexpression_elimination"],
    "eliminate_duplicate_initializer": ["dedup_initializers"],
    "eliminate_if_with_const_cond": ["inline_constant_if"],
    "eliminate_shape_op": ["shape_folding"],
    "eliminate_shape_gather": ["shape_folding"],
    "eliminate_slice_after_shape": ["shape_folding"],
}
for _nop in ("dropout", "pad", "cast", "concat", "split", "expand", "flatten", "reshape",
             "transpose", "with_unit", "monotone_argmax"):
    _OPTIMIZER_PASSES[f"eliminate_nop_{_nop}"] = ["eliminate_noop"]

# onnxkit's basic passes (what `onnxkit simplify --skip-optimization NAME` takes).
_PASSES = sorted({p for passes in _OPTIMIZER_PASSES.values() for p in passes} | {
    "constant_folding", "fuse_reshape_gemm_into_matmul", "fuse_conv_mul", "fuse_convtranspose_bn"})
# What perform_optimization=False leaves running: onnxsim still folds constants then.
_FOLDING = {"constant_folding", "shape_folding", "dead_code_elimination",
            "remove_unused_initializers"}

# Above this size a model goes through files with external data rather than one protobuf
# message (which cannot exceed 2 GiB).
_IN_MEMORY_LIMIT = 3 << 29  # 1.5 GiB


def _parse_size(text):
    """'1.5GB', '100MB', '2KiB', '1024' -> bytes; units are binary, as in onnxsim."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not match:
        raise ValueError(f"tensor_size_threshold '{text}' is not a size (e.g. 1.5GB, 100MB)")
    power = "_kmgt".index(match.group(2).lower()) if match.group(2) else 0
    return int(float(match.group(1)) * 1024**power)


def _parse_shapes(shapes, argument):
    """{name: [dims]} or ['name:d0,d1', ...] -> {name: [dims]}."""
    if shapes is None:
        return {}
    if isinstance(shapes, dict):
        return {str(name): list(dims) for name, dims in shapes.items()}
    result = {}
    for spec in shapes:
        name, colon, dims = str(spec).rpartition(":")
        if not colon or not name:
            raise ValueError(f"{argument}: expected a dict or 'NAME:D0,D1,...', got {spec!r}")
        result[name] = [int(d) if d.lstrip("-").isdigit() else d for d in dims.split(",")]
    return result


def _options(check_n, perform_optimization, skip_fuse_bn, overwrite_input_shapes,
             test_input_shapes, skipped_optimizers, skip_constant_folding, skip_shape_inference,
             input_data, include_subgraph, unused_output, tensor_size_threshold,
             mutable_initializer, check_rtol, check_atol, target_opset_version):
    skip = set()
    for name in skipped_optimizers or []:
        skip.update(_OPTIMIZER_PASSES.get(name, [name] if name in _PASSES else []))
    if not perform_optimization:
        skip.update(p for p in _PASSES if p not in _FOLDING)
    test_shapes = _parse_shapes(test_input_shapes, "test_input_shapes")
    for name, dims in test_shapes.items():
        if not all(isinstance(d, int) for d in dims):
            raise ValueError(f"test_input_shapes '{name}': {dims} is not a list of sizes")
    if isinstance(check_n, str) and check_n == "auto":
        count = -1  # SimplifyOptions::kCheckAuto
    else:
        try:
            count = -2 if isinstance(check_n, bool) else int(check_n)
        except (TypeError, ValueError):
            count = -2
        if count < 0:
            raise ValueError(f"check_n: expected 'auto' or a count (0: no check), got {check_n!r}")
    options = {
        "check_n": count,
        "skip_passes": sorted(skip),
        "skip_fuse_bn": bool(skip_fuse_bn),
        "skip_constant_folding": bool(skip_constant_folding),
        "skip_shape_inference": bool(skip_shape_inference),
        "include_subgraphs": bool(include_subgraph),
        "unused_outputs": [str(n) for n in unused_output or []],
        "tensor_size_threshold": _parse_size(tensor_size_threshold),
        "mutable_initializers": bool(mutable_initializer),
        "check_rtol": float(check_rtol),
        "check_atol": float(check_atol),
        "input_shapes": _parse_shapes(overwrite_input_shapes, "overwrite_input_shapes"),
        "test_input_shapes": test_shapes,
        "check_inputs": dict(input_data or {}),
    }
    if target_opset_version is not None:
        options["target_opset"] = int(target_opset_version)
    return options


def _may_exceed_memory_limit(path):
    """Whether a model file with its possible external data (any file beside it) could be
    too big for one protobuf message; overestimating only costs a temporary file."""
    folder = os.path.dirname(os.path.abspath(path))
    total = 0
    for entry in os.scandir(folder):
        if entry.is_file():
            total += entry.stat().st_size
            if total >= _IN_MEMORY_LIMIT:
                return True
    return False


def simplify(model, check_n=1, perform_optimization=True, skip_fuse_bn=False,
             overwrite_input_shapes=None, test_input_shapes=None, skipped_optimizers=None,
             skip_constant_folding=False, skip_shape_inference=False, input_data=None,
             include_subgraph=True, unused_output=None, tensor_size_threshold="1.5GB",
             mutable_initializer=False, *, check_rtol=1e-4, check_atol=1e-5,
             target_opset_version=None, input_shapes=None, dynamic_input_shape=False,
             custom_lib=None):
    """Simplifies ``model`` (an onnx.ModelProto or a path) as onnxsim.simplify does; returns
    ``(onnx.ModelProto, check_ok)``. ``check_ok`` is False when the simplified model's outputs
    differ from the original's on the check inputs (the reason is given as a warning).
    ``check_n="auto"`` (``onnxkit simplify``'s default) runs one check when both models' runs
    are estimated cheap, and otherwise warns that it skipped it. Models over 2 GiB: pass a path; the result then holds its tensors in memory and is
    saved with ``onnx.save(model, path, save_as_external_data=True)``. ``custom_lib``: an
    onnxkit custom op library (include/onnxkit/custom_op.h) whose ops folding may evaluate."""
    if input_shapes is not None:  # onnxsim's deprecated name for both shape arguments
        overwrite_input_shapes = overwrite_input_shapes or input_shapes
        test_input_shapes = test_input_shapes or input_shapes
    options = _options(check_n, perform_optimization, skip_fuse_bn, overwrite_input_shapes,
                       test_input_shapes, skipped_optimizers, skip_constant_folding,
                       skip_shape_inference, input_data, include_subgraph, unused_output,
                       tensor_size_threshold, mutable_initializer, check_rtol, check_atol,
                       target_opset_version)
    if custom_lib is not None:
        options["custom_op_libraries"] = [os.fspath(custom_lib)]
    with tempfile.TemporaryDirectory(prefix="onnxkit_simplify_") as folder:
        if isinstance(model, (str, os.PathLike)):
            source = os.fspath(model)
            if not os.path.isfile(source):
                raise FileNotFoundError(f"{source}: no such model file")
            large = _may_exceed_memory_limit(source)
        elif isinstance(model, onnx.ModelProto):
            large = model.ByteSize() >= _IN_MEMORY_LIMIT
            if large:
                # Saving with external data rewrites the message it is given: save a copy,
                # the caller's model stays as it is.
                copy = onnx.ModelProto()
                copy.CopyFrom(model)
                source = os.path.join(folder, "input.onnx")
                onnx.save_model(copy, source, save_as_external_data=True,
                                location="input.onnx.data")
                del copy
            else:
                source = model.SerializeToString()
        else:
            raise TypeError(f"simplify: model must be an onnx.ModelProto or a path, "
                            f"not {type(model).__name__}")
        output = os.path.join(folder, "simplified.onnx") if large else ""
        result, check_ok, message, notes = _onnxkit.simplify(source, output, options)
        simplified = onnx.load_model(output) if large else onnx.load_from_string(result)
    for note in notes:
        warnings.warn(f"onnxkit.simplify: {note}", stacklevel=2)
    if not check_ok:
        warnings.warn(f"onnxkit.simplify: check failed: {message}", stacklevel=2)
    return simplified, check_ok
