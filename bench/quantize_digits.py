"""Accuracy of int8 models on real data: handwritten digits (sklearn's load_digits, 1,797
real 8x8 images that ship with Debian's python3-sklearn).

Trains a small CNN with Debian's python3-torch (fixed seeds, 80/20 split stratified by
class), exports
it to ONNX (opset 13, dynamic batch), writes the test split and the training split (the
calibration data) as .npy, then runs bench/quantize_side_by_side.py with the project's
.venv Python: the model quantized statically (calibrated on the training split) and
dynamically by ONNX Runtime's tool and by `onnxkit quantize`, each file's test accuracy in
ONNX Runtime and in onnxkit.

usage (from the repository root; needs scripts/install_model_tools.sh and the .venv with
bench/requirements-ort.txt):
  /usr/bin/python3 bench/quantize_digits.py [--out DIR] [--epochs 30] [--per-channel]
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import torch

# Where Debian's python3-sklearn keeps the data set.
DIGITS_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def load_digits_data(csv):
    """(images [1797, 8, 8] in 0..16, labels): sklearn's loader, or its data file read
    directly (python3-sklearn cannot always be installed: its python3-scipy pulls in
    libboost1.74-dev through python3-pythran, which conflicts with libboost1.81-dev)."""
    try:
        from sklearn.datasets import load_digits

        digits = load_digits()
        return digits.images, digits.target
    except ImportError:
        data = np.loadtxt(csv, delimiter=",")
        return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)


def stratified_split(y, test_fraction, seed):
    """Indices of a split that keeps each class's share (as sklearn's stratify=y does)."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        cut = int(round(len(members) * test_fraction))
        test.extend(members[:cut])
        train.extend(members[cut:])
    return np.sort(np.array(train)), np.sort(np.array(test))


class DigitsNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        )
        self.classifier = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/onnxkit_digits")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--per-channel", action="store_true")
    parser.add_argument("--venv-python", default=".venv/bin/python")
    parser.add_argument("--onnxkit", default="build/onnxkit")
    parser.add_argument("--digits-csv", default=DIGITS_CSV,
                        help="sklearn's digits.csv.gz, read when sklearn cannot be imported")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    images, target = load_digits_data(args.digits_csv)
    x = (images / 16.0).astype(np.float32)[:, None, :, :]
    y = target.astype(np.int64)
    train, test = stratified_split(y, 0.2, seed=0)
    x_train, x_test, y_train, y_test = x[train], x[test], y[train], y[test]

    model = DigitsNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            batch = order[i:i + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[batch]), yt[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()
    print(f"torch fp32 test accuracy: {100 * accuracy:.2f}% ({len(y_test)} images)", file=sys.stderr)

    os.makedirs(os.path.join(args.out, "eval"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "calibration"), exist_ok=True)
    path = os.path.join(args.out, "digits_cnn.onnx")
    torch.onnx.export(model, torch.from_numpy(x_test[:1]), path, opset_version=13, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    np.save(os.path.join(args.out, "eval", "image.npy"), x_test)
    np.save(os.path.join(args.out, "labels.npy"), y_test)
    np.save(os.path.join(args.out, "calibration", "image.npy"), x_train)
    command = [args.venv_python, os.path.join(os.path.dirname(__file__), "quantize_side_by_side.py"),
               "--model", path, "--eval", os.path.join(args.out, "eval"),
               "--labels", os.path.join(args.out, "labels.npy"),
               "--calibration", os.path.join(args.out, "calibration"), "--onnxkit", args.onnxkit,
               "--out", args.out, "--json", os.path.join(args.out, "digits.json"), "--runs", "20",
               "--op-types", "Conv", "MatMul", "Gemm"]
    if args.per_channel:
        command.append("--per-channel")
    sys.exit(subprocess.call(command))


if __name__ == "__main__":
    main()
