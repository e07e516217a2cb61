#!/usr/bin/python3
"""Compares two folders of model outputs, file by file (NAME.npy, as `onnxkit run --output-dir`
and bench/ort_optimize.js --output-dir write them), or a folder against an ONNX test case's
reference outputs (test_data_set_N/output_K.pb, matched to the model's outputs by position).

    /usr/bin/python3 bench/compare_outputs.py EXPECTED_DIR ACTUAL_DIR [--rtol R] [--atol A]
    /usr/bin/python3 bench/compare_outputs.py CASE_DIR/test_data_set_0 ACTUAL_DIR --model CASE_DIR/model.onnx

Prints one line per output (shape, max abs and max relative difference, pass/fail under
|a - e| <= atol + rtol * |e|, as `onnxkit conformance`) and exits 1 if any differs.
"""

import argparse
import glob
import os
import sys

import numpy as np


def load_expected(folder, model):
    if model is None:
        return {os.path.basename(p)[:-4]: np.load(p) for p in sorted(glob.glob(os.path.join(folder, "*.npy")))}
    import onnx
    import onnx.numpy_helper
    names = [o.name for o in onnx.load(model, load_external_data=False).graph.output]
    out = {}
    for i, name in enumerate(names):
        path = os.path.join(folder, f"output_{i}.pb")
        if os.path.exists(path):
            out[name] = onnx.numpy_helper.to_array(onnx.load_tensor(path))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--model", help="the model, to name test_data_set outputs")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-5)
    a = p.parse_args()
    expected = load_expected(a.expected, a.model)
    if not expected:
        print(f"compare_outputs: no outputs in {a.expected}", file=sys.stderr)
        return 1
    bad = 0
    for name, e in expected.items():
        stem = "".join(c if c.isalnum() or c in "_-." else "_" for c in name)
        path = os.path.join(a.actual, stem + ".npy")
        if not os.path.exists(path):
            print(f"MISSING {name}: no {path}")
            bad += 1
            continue
        g = np.load(path)
        if g.shape != e.shape or g.dtype != e.dtype:
            print(f"FAIL {name}: {g.dtype}{list(g.shape)} vs expected {e.dtype}{list(e.shape)}")
            bad += 1
            continue
        if e.dtype.kind in "fc":
            ef, gf = e.astype(np.float64), g.astype(np.float64)
            diff = np.abs(gf - ef)
            nan_ok = np.array_equal(np.isnan(ef), np.isnan(gf))
            diff = np.where(np.isnan(diff), 0, diff)
            ok = nan_ok and bool(np.all(diff <= a.atol + a.rtol * np.abs(np.nan_to_num(ef))))
            rel = diff / np.maximum(np.abs(np.nan_to_num(ef)), 1e-12)
            detail = (f"max abs diff {diff.max() if diff.size else 0:.3g}, "
                      f"max rel diff {rel.max() if rel.size else 0:.3g}, max |expected| "
                      f"{np.abs(np.nan_to_num(ef)).max() if ef.size else 0:.3g}")
        else:
            ok = bool(np.array_equal(g, e))
            detail = f"{int(np.sum(g != e))} elements differ"
        print(f"{'PASS' if ok else 'FAIL'} {name}: {e.dtype}{list(e.shape)}, {detail}")
        bad += not ok
    print(f"{len(expected) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
