#!/usr/bin/python3
"""Writes examples/custom_op/inverse_model.onnx the way a PyTorch user gets one: torch.onnx
with ONNX Runtime's symbolic for torch.inverse (com.microsoft::Inverse, which the ONNX standard
lacks), exported without constant folding as simplify's input usually is.

y = (inverse(x) @ inverse(w)) * (scale * 2), x: float[batch,3,3]. inverse(w) and scale * 2
depend on weights only: simplify folds them when the library is loaded, and folds around
the custom node when it is not.

Needs Debian's python3-torch (1.13). The output is checked in; rerun only to change it.
"""
import os

import torch
from torch.onnx import register_custom_op_symbolic


def inverse_symbolic(g, self):
    return g.op("com.microsoft::Inverse", self).setType(self.type())


# torch 1.13 traces torch.inverse as aten::linalg_inv.
register_custom_op_symbolic("aten::linalg_inv", inverse_symbolic, 1)


class InverseModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(20261206)
        self.w = torch.nn.Parameter(torch.randn(3, 3, generator=generator) + 3 * torch.eye(3))
        self.scale = torch.nn.Parameter(torch.rand(3, generator=generator) + 0.5)

    def forward(self, x):
        return (torch.inverse(x) @ torch.inverse(self.w)) * (self.scale * 2)


path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inverse_model.onnx")
torch.onnx.export(InverseModel(), torch.eye(3).repeat(2, 1, 1) * 2, path, opset_version=17,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}},
                  do_constant_folding=False, custom_opsets={"com.microsoft": 1})
print("wrote", path)
