"""onnxkit (its Python module) and ONNX Runtime on one model, alternating in one process, one
thread each: median wall time and median CPU time of the running thread per run, and the
fastest run of each.

    .venv/bin/python bench/cpu_side_by_side.py MODEL.onnx RUNS NAME=FILE.npy ...

On a shared machine the thread's CPU time (time.thread_time) moves far less with the load
than wall time does; both are printed, with onnxkit / ORT ratios. A benchmark, never a test.
"""
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

import onnxkit


def main():
    model, runs = sys.argv[1], int(sys.argv[2])
    feeds = {a.split("=")[0]: np.load(a.split("=", 1)[1]) for a in sys.argv[3:]}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    peer = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    ours_options = onnxkit.SessionOptions()
    ours_options.intra_op_num_threads = 1
    ours = onnxkit.InferenceSession(model, ours_options)
    for _ in range(3):
        peer.run(None, feeds)
        ours.run(None, feeds)
    times = {"onnxkit": ([], []), "ort": ([], [])}
    for i in range(runs):
        order = [("onnxkit", ours), ("ort", peer)]
        for name, session in order if i % 2 == 0 else reversed(order):
            wall, cpu = time.perf_counter(), time.thread_time()
            session.run(None, feeds)
            times[name][1].append(time.thread_time() - cpu)
            times[name][0].append(time.perf_counter() - wall)
    med = {k: (statistics.median(v[0]) * 1e3, statistics.median(v[1]) * 1e3)
           for k, v in times.items()}
    print(f"{model}: onnxkit wall {med['onnxkit'][0]:.1f} cpu {med['onnxkit'][1]:.1f} ms | "
          f"ORT wall {med['ort'][0]:.1f} cpu {med['ort'][1]:.1f} ms | onnxkit/ORT wall "
          f"{med['onnxkit'][0] / med['ort'][0]:.3f} cpu {med['onnxkit'][1] / med['ort'][1]:.3f}")
    # The least disturbed run of each (on a loaded machine, what the runtimes can do).
    low = {k: (min(v[0]) * 1e3, min(v[1]) * 1e3) for k, v in times.items()}
    print(f"  fastest: onnxkit wall {low['onnxkit'][0]:.2f} cpu {low['onnxkit'][1]:.2f} ms | ORT wall "
          f"{low['ort'][0]:.2f} cpu {low['ort'][1]:.2f} ms | onnxkit/ORT wall "
          f"{low['onnxkit'][0] / low['ort'][0]:.3f} cpu {low['onnxkit'][1] / low['ort'][1]:.3f}")


if __name__ == "__main__":
    main()
