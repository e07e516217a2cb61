"""The example custom op library side by side with the peer: examples/custom_op/inverse_model.onnx
(com.microsoft::Inverse, which ONNX Runtime implements as a contrib op) run by ONNX Runtime and
by `onnxkit run --custom-op-lib` on the same inputs; the outputs must agree.

python inverse_vs_onnxruntime.py ONNXKIT_BINARY LIBRARY MODEL
Exits 77 (CTest: skipped) when onnxruntime is not installed in the venv running it.
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    import onnxruntime
except ImportError:
    print("onnxruntime is not installed: skipped")
    sys.exit(77)

binary, library, model = sys.argv[1:4]
rng = np.random.default_rng(29)
failures = 0
for batch in (1, 4, 16):
    # Well conditioned: a random matrix plus 3 I.
    x = (rng.standard_normal((batch, 3, 3)) + 3 * np.eye(3)).astype(np.float32)
    expected = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    with tempfile.TemporaryDirectory() as folder:
        np.save(Path(folder) / "x.npy", x)
        subprocess.run([binary, "run", "--custom-op-lib", library, "--input",
                        f"x={folder}/x.npy", "--output-dir", folder, model],
                       check=True, capture_output=True)
        got = np.load(Path(folder) / "y.npy")
    error = float(np.max(np.abs(got - expected)))
    ok = got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4, atol=1e-5)
    print(f"batch {batch}: shape {got.shape}, max abs difference from onnxruntime "
          f"{onnxruntime.__version__}: {error:.3g} {'ok' if ok else 'MISMATCH'}")
    failures += not ok
sys.exit(1 if failures else 0)
