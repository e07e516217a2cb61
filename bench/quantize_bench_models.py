"""int8 versions of the bench models made by ONNX Runtime's own tool, for bench/int8_side_by_side.py.

    /work/main/.venv/bin/python bench/quantize_bench_models.py [MODELS_DIR] [OUT_DIR]

MODELS_DIR (default bench/models) holds the fp32 exports (bench/export_models.py); OUT_DIR
(default MODELS_DIR/int8) gets:
  bert_base_dynamic.onnx, gpt2_6l_dynamic.onnx     quantize_dynamic (MatMulInteger), int8 weights
  resnet50_qdq.onnx, mobilenet_v2_qdq.onnx         quantize_static QDQ, per-channel, calibrated
                                                   on a few random inputs (enough for speed)
  resnet50_convinteger.onnx                        quantize_dynamic with Conv (ConvInteger)
  resnet50_qoperator.onnx, mobilenet_v2_qoperator.onnx
                                                   quantize_static QOperator (QLinearConv and
                                                   com.microsoft QLinearAdd, QLinearGlobal-
                                                   AveragePool, QGemm, ...), per-channel,
                                                   int8 activations (the tool's default)
  resnet50_qoperator_u8.onnx, mobilenet_v2_qoperator_u8.onnx   the same, uint8 activations
  resnet50_qdq_u8.onnx, mobilenet_v2_qdq_u8.onnx               QDQ with uint8 activations
onnxruntime is the peer and test-data maker here, never a dependency of onnxkit.
"""
import os
import sys

import numpy as np
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RandomImages(CalibrationDataReader):
    def __init__(self, count=4):
        rng = np.random.default_rng(0)
        self.it = iter([{"input": rng.normal(0, 1, (1, 3, 224, 224)).astype(np.float32)}
                        for _ in range(count)])

    def get_next(self):
        return next(self.it, None)


def main():
    models = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "models")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(models, "int8")
    os.makedirs(out, exist_ok=True)
    only = set(sys.argv[3:])

    def pre(name):
        path = os.path.join(out, f"{name}_pre.onnx")
        if not os.path.exists(path):
            quant_pre_process(os.path.join(models, f"{name}.onnx"), path, skip_symbolic_shape=True)
        return path

    jobs = {
        "bert_base_dynamic": lambda p: quantize_dynamic(pre("bert_base"), p,
                                                        weight_type=QuantType.QInt8),
        "gpt2_6l_dynamic": lambda p: quantize_dynamic(pre("gpt2_6l"), p,
                                                      weight_type=QuantType.QInt8),
        "resnet50_convinteger": lambda p: quantize_dynamic(
            pre("resnet50"), p, weight_type=QuantType.QInt8,
            op_types_to_quantize=["Conv", "MatMul", "Gemm"]),
        "resnet50_qdq": lambda p: quantize_static(pre("resnet50"), p, RandomImages(),
                                                  quant_format=QuantFormat.QDQ, per_channel=True),
        "mobilenet_v2_qdq": lambda p: quantize_static(pre("mobilenet_v2"), p, RandomImages(),
                                                      quant_format=QuantFormat.QDQ,
                                                      per_channel=True),
        "resnet50_qoperator": lambda p: quantize_static(
            pre("resnet50"), p, RandomImages(), quant_format=QuantFormat.QOperator,
            per_channel=True),
        "mobilenet_v2_qoperator": lambda p: quantize_static(
            pre("mobilenet_v2"), p, RandomImages(), quant_format=QuantFormat.QOperator,
            per_channel=True),
        # uint8 activations (ORT's x64 advice for QOperator; its default int8 ones run slowly)
        "resnet50_qoperator_u8": lambda p: quantize_static(
            pre("resnet50"), p, RandomImages(), quant_format=QuantFormat.QOperator,
            per_channel=True, activation_type=QuantType.QUInt8),
        "mobilenet_v2_qoperator_u8": lambda p: quantize_static(
            pre("mobilenet_v2"), p, RandomImages(), quant_format=QuantFormat.QOperator,
            per_channel=True, activation_type=QuantType.QUInt8),
        "resnet50_qdq_u8": lambda p: quantize_static(
            pre("resnet50"), p, RandomImages(), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QUInt8),
        "mobilenet_v2_qdq_u8": lambda p: quantize_static(
            pre("mobilenet_v2"), p, RandomImages(), quant_format=QuantFormat.QDQ,
            per_channel=True, activation_type=QuantType.QUInt8),
    }
    for name, make in jobs.items():
        if only and name not in only:
            continue
        path = os.path.join(out, f"{name}.onnx")
        if os.path.exists(path):
            continue
        make(path)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
