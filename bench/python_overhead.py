#!/usr/bin/env python3
"""Per-call overhead of onnxkit.InferenceSession.run over the C++ API, on a tiny model, with
onnxruntime's InferenceSession.run beside it.

    .venv/bin/python bench/python_overhead.py [--calls 20000] [--rounds 7]

Per round, alternating: onnxkit's Session::run called from C++ in a loop (the C++ API's own
cost, same inputs converted once), onnxkit.InferenceSession.run from Python, and
onnxruntime.InferenceSession.run from Python. Prints the median microseconds per call of each
and onnxkit's Python overhead (Python minus C++). The machine is shared: compare within one
run only.
"""

import argparse
import statistics
import time

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

import onnxkit


def tiny_model(width):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "tiny", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def per_call_python(session, feeds, calls):
    run = session.run
    start = time.perf_counter()
    for _ in range(calls):
        run(None, feeds)
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--width", type=int, default=16, help="elements of the Add")
    args = parser.parse_args()

    model = tiny_model(args.width)
    feeds = {"x": np.arange(args.width, dtype=np.float32).reshape(1, args.width)}
    ours_options = onnxkit.SessionOptions()
    ours_options.intra_op_num_threads = 1
    ours = onnxkit.InferenceSession(model, ours_options)
    theirs_options = onnxruntime.SessionOptions()
    theirs_options.intra_op_num_threads = 1
    theirs = onnxruntime.InferenceSession(model, theirs_options,
                                          providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(ours.run(None, feeds)[0], theirs.run(None, feeds)[0])

    cpp, python, ort = [], [], []
    for _ in range(args.rounds):
        cpp.append(ours._sess.time_cpp_runs(feeds, args.calls))
        python.append(per_call_python(ours, feeds, args.calls))
        ort.append(per_call_python(theirs, feeds, args.calls))
    us = 1e6
    cpp_us, python_us, ort_us = (statistics.median(v) * us for v in (cpp, python, ort))
    print(f"tiny model (Add of 1x{args.width} floats), {args.calls} calls x {args.rounds} "
          f"rounds, medians of rounds, one intra-op thread")
    print(f"  onnxkit C++ Session::run          {cpp_us:8.2f} us/call")
    print(f"  onnxkit InferenceSession.run      {python_us:8.2f} us/call")
    print(f"  onnxruntime InferenceSession.run  {ort_us:8.2f} us/call")
    print(f"  onnxkit Python overhead           {python_us - cpp_us:8.2f} us/call "
          f"(target <= 20)")
    print(f"  onnxkit / onnxruntime per call    {python_us / ort_us:8.2f}x")


if __name__ == "__main__":
    main()
