#!/usr/bin/python3
"""Exports the benchmark model set to ONNX, with random weights (nothing can be downloaded).

    /usr/bin/python3 bench/export_models.py [OUT_DIR] [--only NAME,...]   # full size, default bench/models/
    /usr/bin/python3 bench/export_models.py --small [OUT_DIR]             # tiny versions, default tests/data/models/

Needs Debian's python3-torch (1.13), python3-torchvision (0.14), python3-onnx and python3-numpy
(scripts/install_model_tools.sh). Run it with /usr/bin/python3.

Every export uses opset 13, do_constant_folding=False, dynamic batch axes (and a dynamic
sequence axis for the text models), fixed seeds, and keeps BatchNormalization unfused:

  torch 1.13's exporter, with training=TrainingMode.EVAL (the default), runs the
  "eval peephole" pass (torch._C._jit_pass_onnx_eval_peephole), which folds every
  Conv+BatchNorm pair into the Conv's weights -- and it does so even with
  do_constant_folding=False. With training=TrainingMode.PRESERVE and the model in eval mode
  that pass is skipped (it runs only for EVAL), the model's own mode decides each op's
  symbolic, so BatchNorm is exported as an inference-form BatchNormalization (one output,
  running mean/var as initializers) and Dropout is dropped as in eval. TrainingMode.TRAINING
  (or PRESERVE with the model in train mode) would export BatchNormalization with its
  training outputs (running mean/var updates) and live Dropout nodes. `--check-bn` prints
  these counts for a small conv net under each combination.

Each exported model is checked with onnx.checker (full_check: with shape inference) and its
node counts are printed. The --small models also get a reference test case computed by
PyTorch, in the ONNX backend-test layout that `onnxkit conformance` reads:
NAME/model.onnx and NAME/test_data_set_0/{input,output}_N.pb.
"""

import argparse
import math
import os
import sys
import time
from collections import Counter

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 13
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------------
# Weight initialisation helpers


def perturb_uniform_parameters(model, seed):
    """Adds small noise to every parameter whose elements are all equal (zero biases, unit
    LayerNorm weights, ConvNeXt's 1e-6 layer scales, ViT's zero class token), as training
    would. Without it torch's exporter deduplicates the identical initializers and inserts
    Identity nodes that no exported trained model has."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            flat = p.reshape(-1)
            if flat.numel() and bool(torch.all(flat == flat[0])):
                c = float(flat[0])
                noise = torch.randn(p.shape, generator=g)
                p.add_(noise * 0.05 if abs(c) < 0.01 else noise * 0.1 * c)


def randomize_batchnorm(model, seed):
    """Gives every BatchNorm non-trivial affine parameters. Running statistics are then set
    by calibrate_batchnorm, so activations stay in a realistic range through deep nets."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.weight.copy_(torch.empty_like(m.weight).uniform_(0.8, 1.2, generator=g))
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.05)


def calibrate_batchnorm(model, make_input, steps=2, seed=0):
    """Sets BatchNorm running mean/var to the statistics of a few random batches (cumulative
    average), then puts the model back in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        model.eval()
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(steps):
            model(make_input(g))
    for m in bns:
        m.momentum = 0.1
    model.eval()


# --------------------------------------------------------------------------------------------
# BERT (plain torch, in the style of HuggingFace's BertModel)


class BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos, type_vocab, eps):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros((1, max_pos), dtype=torch.long))

    def forward(self, input_ids):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, 0:seq_length]
        token_type_ids = self.token_type_ids[:, :seq_length].expand(input_shape[0], seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.all_head_size = hidden
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        scores = scores / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(probs, value_layer).permute(0, 2, 1, 3).contiguous()
        new_shape = context.size()[:-2] + (self.all_head_size,)
        return context.view(new_shape)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate, eps):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, attention_mask):
        a = self.attention(hidden_states, attention_mask)
        a = self.attention_norm(self.dropout(self.attention_output(a)) + hidden_states)
        i = F.gelu(self.intermediate(a))  # erf form, as HF's "gelu"
        return self.output_norm(self.dropout(self.output(i)) + a)


class BertModel(nn.Module):
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, intermediate=3072,
                 max_pos=512, type_vocab=2, eps=1e-12):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, hidden, max_pos, type_vocab, eps)
        self.layers = nn.ModuleList(
            [BertLayer(hidden, heads, intermediate, eps) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)
        for m in self.modules():  # BERT's init: N(0, 0.02), zero biases, LayerNorm (1, 0)
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask):
        # get_extended_attention_mask: [batch, seq] -> [batch, 1, 1, seq], 0 keep / min drop
        extended = attention_mask[:, None, None, :].to(dtype=torch.float32)
        extended = (1.0 - extended) * torch.finfo(torch.float32).min
        h = self.embeddings(input_ids)
        for layer in self.layers:
            h = layer(h, extended)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return h, pooled


# --------------------------------------------------------------------------------------------
# GPT-2-style decoder (plain torch, in the style of HuggingFace's GPT2Model / GPT2LMHeadModel)


class Conv1D(nn.Module):
    """GPT-2's transposed Linear: y = x @ W + b with W [nx, nf], through a 2-D addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.split_size = hidden
        self.c_attn = Conv1D(3 * hidden, hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _split_heads(self, x):
        new_shape = x.size()[:-1] + (self.num_heads, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        new_shape = x.size()[:-2] + (self.num_heads * self.head_dim,)
        return x.view(new_shape)

    def forward(self, h):
        query, key, value = self.c_attn(h).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
        # Causal mask from the sequence length at run time: Range -> Unsqueeze -> GreaterOrEqual.
        q_len, k_len = query.size(-2), key.size(-2)
        q_pos = torch.arange(k_len - q_len, k_len, device=h.device)
        k_pos = torch.arange(k_len, device=h.device)
        causal_mask = (q_pos[:, None] >= k_pos[None, :])[None, None]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(causal_mask, w, mask_value)
        w = self.attn_dropout(F.softmax(w, dim=-1))
        a = self._merge_heads(torch.matmul(w, value))
        return self.resid_dropout(self.c_proj(a))


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.attn = GPT2Attention(hidden, heads)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.c_fc = Conv1D(4 * hidden, hidden)
        self.c_proj = Conv1D(hidden, 4 * hidden)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h):
        h = h + self.attn(self.ln_1(h))
        return h + self.dropout(self.c_proj(gelu_new(self.c_fc(self.ln_2(h)))))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab=50257, hidden=768, layers=6, heads=12, max_pos=1024, eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(hidden, heads, eps) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=eps)

    def forward(self, input_ids):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        h = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        for block in self.h:
            h = block(h)
        h = self.ln_f(h)
        h = h.view(input_shape + (h.size(-1),))
        return torch.matmul(h, self.wte.weight.t())  # LM head tied to the token embedding


# --------------------------------------------------------------------------------------------
# YOLO-style detector (in the style of YOLOv5: CSP backbone, SPPF, PAN neck, Detect head)


class ConvBnSiLU(nn.Module):
    def __init__(self, c1, c2, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True):
        super().__init__()
        self.cv1 = ConvBnSiLU(c1, c2, 1)
        self.cv2 = ConvBnSiLU(c2, c2, 3)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """CSP bottleneck with three convolutions."""

    def __init__(self, c1, c2, n=1, shortcut=True):
        super().__init__()
        c_ = c2 // 2
        self.cv1 = ConvBnSiLU(c1, c_, 1)
        self.cv2 = ConvBnSiLU(c1, c_, 1)
        self.cv3 = ConvBnSiLU(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = ConvBnSiLU(c1, c_, 1)
        self.cv2 = ConvBnSiLU(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Detect(nn.Module):
    def __init__(self, nc, anchors, ch, strides):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.nl = len(anchors)
        self.na = len(anchors[0]) // 2
        self.register_buffer("stride", torch.tensor(strides, dtype=torch.float32))
        self.register_buffer("anchor_grid", torch.tensor(anchors, dtype=torch.float32)
                             .view(self.nl, 1, self.na, 1, 1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def forward(self, xs):
        z = []
        for i in range(self.nl):
            x = self.m[i](xs[i])
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            # Grid from the feature map's size at run time: Range -> Reshape/Expand -> Stack.
            yv = torch.arange(ny, dtype=torch.float32).view(ny, 1).expand(ny, nx)
            xv = torch.arange(nx, dtype=torch.float32).view(1, nx).expand(ny, nx)
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2)
            y = x.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride[i]
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
            y = torch.cat((xy, wh, y[..., 4:]), -1)
            z.append(y.view(bs, -1, self.no))
        return torch.cat(z, 1)


class YoloDetector(nn.Module):
    def __init__(self, width=(32, 64, 128, 256, 512), depth=(1, 2, 3, 1), nc=80):
        super().__init__()
        w0, w1, w2, w3, w4 = width
        n1, n2, n3, n4 = depth
        # backbone
        self.stem = ConvBnSiLU(3, w0, 6, 2, 2)  # P1/2 (6x6 stem conv, as YOLOv5 v6)
        self.b1 = nn.Sequential(ConvBnSiLU(w0, w1, 3, 2), C3(w1, w1, n1))  # P2/4
        self.b2 = nn.Sequential(ConvBnSiLU(w1, w2, 3, 2), C3(w2, w2, n2))  # P3/8
        self.b3 = nn.Sequential(ConvBnSiLU(w2, w3, 3, 2), C3(w3, w3, n3))  # P4/16
        self.b4 = nn.Sequential(ConvBnSiLU(w3, w4, 3, 2), C3(w4, w4, n4), SPPF(w4, w4))  # P5/32
        # neck (FPN top-down, PAN bottom-up)
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.lat5 = ConvBnSiLU(w4, w3, 1)
        self.td4 = C3(2 * w3, w3, n4, shortcut=False)
        self.lat4 = ConvBnSiLU(w3, w2, 1)
        self.td3 = C3(2 * w2, w2, n4, shortcut=False)  # -> P3 out
        self.down3 = ConvBnSiLU(w2, w2, 3, 2)
        self.bu4 = C3(2 * w2, w3, n4, shortcut=False)  # -> P4 out
        self.down4 = ConvBnSiLU(w3, w3, 3, 2)
        self.bu5 = C3(2 * w3, w4, n4, shortcut=False)  # -> P5 out
        anchors = [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]]
        self.detect = Detect(nc, anchors, (w2, w3, w4), (8.0, 16.0, 32.0))

    def forward(self, x):
        x = self.b1(self.stem(x))
        p3 = self.b2(x)
        p4 = self.b3(p3)
        p5 = self.b4(p4)
        l5 = self.lat5(p5)
        t4 = self.td4(torch.cat((self.up(l5), p4), 1))
        l4 = self.lat4(t4)
        o3 = self.td3(torch.cat((self.up(l4), p3), 1))
        o4 = self.bu4(torch.cat((self.down3(o3), l4), 1))
        o5 = self.bu5(torch.cat((self.down4(o4), l5), 1))
        return self.detect([o3, o4, o5])


# --------------------------------------------------------------------------------------------
# Small conv net with BatchNorm (the --small set)


class TinyConvNetBN(nn.Module):
    """Conv+BN+ReLU stem, a residual block, a depthwise-separable block with squeeze-excite,
    global pooling, Flatten and Gemm: the patterns simplify must fold and fuse."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.res = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16))
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
                                nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32))
        self.se_reduce = nn.Conv2d(32, 8, 1)
        self.se_expand = nn.Conv2d(8, 32, 1)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(x + self.res(x))
        x = self.dw(x)
        s = F.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        x = F.hardswish(x * s)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(self.dropout(x))


class TinyFPN(nn.Module):
    """An FPN/UNet-style net on an input whose batch, height and width are all dynamic: five
    stride-2 stages (a MaxPool among them) downsample 32x, nearest upsampling and skip Adds
    come back up. Its Adds only broadcast when H and W are multiples of 32, as in the
    detectors converted from Paddle."""

    def __init__(self, width=8):
        super().__init__()
        def block(c1, c2, stride):
            return nn.Sequential(nn.Conv2d(c1, c2, 3, stride, 1, bias=False), nn.BatchNorm2d(c2), nn.ReLU())
        self.down = nn.ModuleList([block(3, width, 2), block(width, width, 2), nn.MaxPool2d(2, 2),
                                   block(width, width, 2), block(width, width, 2)])
        self.lateral = nn.Conv2d(width, width, 1)
        self.head = nn.Conv2d(width, 1, 3, 1, 1)

    def forward(self, x):
        skips = []
        for stage in self.down:
            x = stage(x)
            skips.append(x)
        for skip in reversed(skips[:-1]):
            x = F.interpolate(x, scale_factor=2.0, mode="nearest") + self.lateral(skip)
        return torch.sigmoid(self.head(x))


class TinyStatefulLSTM(nn.Module):
    """A voice-activity-detector-like net with its LSTM state as inputs and outputs:
    input [batch, sequence], h and c [2, batch, 16]; 'batch' is one symbol across the three."""

    def __init__(self, hidden=16):
        super().__init__()
        self.embed = nn.Linear(1, 8)
        self.lstm = nn.LSTM(8, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x, h, c):
        y, (hn, cn) = self.lstm(torch.tanh(self.embed(x.unsqueeze(-1))), (h, c))
        return torch.sigmoid(self.out(y)).squeeze(-1), hn, cn


# --------------------------------------------------------------------------------------------
# The model set


class Spec:
    def __init__(self, name, build, inputs, input_names, output_names, dynamic_axes,
                 grad_trace=False, bn_calibrate=None):
        self.name = name
        self.build = build  # () -> nn.Module (weights random, seeded by the caller)
        self.inputs = inputs  # (torch.Generator) -> tuple of example tensors
        self.input_names = input_names
        self.output_names = output_names
        self.dynamic_axes = dynamic_axes
        self.grad_trace = grad_trace  # torchvision ViT: its no-grad fast path cannot export
        self.bn_calibrate = bn_calibrate  # (torch.Generator) -> batch for BN statistics


def image_inputs(batch, size):
    return lambda g: (torch.randn(batch, 3, size, size, generator=g),)


def vision_spec(name, build, size=224, batch=1, calib_batch=4, classes_name="logits"):
    return Spec(name, build, image_inputs(batch, size), ["input"], [classes_name],
                {"input": {0: "batch"}, classes_name: {0: "batch"}},
                bn_calibrate=lambda g: torch.randn(calib_batch, 3, size, size, generator=g))


def text_inputs(batch, seq, vocab, with_mask):
    def make(g):
        ids = torch.randint(0, vocab, (batch, seq), generator=g, dtype=torch.long)
        if not with_mask:
            return (ids,)
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[:, seq - seq // 4:] = 0  # padded tail, so the mask matters
        return ids, mask
    return make


def bert_spec(name, seq, **kw):
    vocab = kw.get("vocab", 30522)
    return Spec(name, lambda: BertModel(**kw), text_inputs(1, seq, vocab, True),
                ["input_ids", "attention_mask"], ["last_hidden_state", "pooler_output"],
                {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                 "last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}})


def gpt2_spec(name, seq, **kw):
    vocab = kw.get("vocab", 50257)
    return Spec(name, lambda: GPT2LMHeadModel(**kw), text_inputs(1, seq, vocab, False),
                ["input_ids"], ["logits"],
                {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})


def vit(image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, num_classes=1000):
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                          num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim,
                          num_classes=num_classes)
    with torch.no_grad():  # torchvision zero-initialises the class token and the classifier
        nn.init.normal_(m.class_token, std=0.02)
        nn.init.normal_(m.heads.head.weight, std=0.02)
        nn.init.normal_(m.heads.head.bias, std=0.02)
    return m


def yolo_spec(name, size, batch=1, calib_batch=2, **kw):
    return Spec(name, lambda: YoloDetector(**kw), image_inputs(batch, size), ["images"], ["detections"],
                {"images": {0: "batch"}, "detections": {0: "batch"}},
                bn_calibrate=lambda g: torch.randn(calib_batch, 3, size, size, generator=g))


def full_specs():
    import torchvision.models as tvm
    return [
        vision_spec("resnet50", lambda: tvm.resnet50(weights=None)),
        vision_spec("mobilenet_v2", lambda: tvm.mobilenet_v2(weights=None)),
        vision_spec("efficientnet_b0", lambda: tvm.efficientnet_b0(weights=None)),
        vision_spec("convnext_tiny", lambda: tvm.convnext_tiny(weights=None)),
        Spec("vit_s16_6l", lambda: vit(224, 16, 6, 6, 384, 1536), image_inputs(1, 224),
             ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}, grad_trace=True),
        bert_spec("bert_base", 128),
        gpt2_spec("gpt2_6l", 128, layers=6),
        yolo_spec("yolo_csp", 640),
    ]


def large_specs():
    """Exported only when named with --only: a model over 2 GiB (external data), for
    `onnxkit simplify` on big models. GPT-2-style, 26 layers, hidden 1280: 577M parameters,
    2.3 GB."""
    return [gpt2_spec("gpt2_2g", 128, layers=26, hidden=1280, heads=20)]


def small_specs():
    return [
        vision_spec("convnet_bn_tiny", TinyConvNetBN, size=32, batch=2, calib_batch=8),
        yolo_spec("yolo_tiny", 64, batch=1, calib_batch=4,
                  width=(8, 8, 16, 16, 32), depth=(1, 1, 1, 1), nc=3),
        Spec("vit_tiny", lambda: vit(32, 8, 2, 2, 32, 64, num_classes=10), image_inputs(1, 32),
             ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}, grad_trace=True),
        bert_spec("bert_tiny", 16, vocab=128, hidden=32, layers=2, heads=4, intermediate=128, max_pos=32),
        gpt2_spec("gpt2_tiny", 16, vocab=128, hidden=32, layers=2, heads=4, max_pos=64),
        Spec("fpn_dynamic_tiny", TinyFPN, image_inputs(1, 64), ["x"], ["mask"],
             {"x": {0: "N", 2: "H", 3: "W"}, "mask": {0: "N", 2: "H", 3: "W"}},
             bn_calibrate=lambda g: torch.randn(4, 3, 64, 64, generator=g)),
        Spec("lstm_state_tiny", TinyStatefulLSTM,
             lambda g: (torch.randn(1, 12, generator=g), torch.randn(2, 1, 16, generator=g),
                        torch.randn(2, 1, 16, generator=g)),
             ["input", "h", "c"], ["output", "hn", "cn"],
             {"input": {0: "batch", 1: "sequence"}, "h": {1: "batch"}, "c": {1: "batch"},
              "output": {0: "batch", 1: "sequence"}, "hn": {1: "batch"}, "cn": {1: "batch"}}),
    ]


# --------------------------------------------------------------------------------------------
# Export


def count_nodes(graph):
    """Op histogram over a graph and the bodies of If/Loop/Scan."""
    c = Counter()
    for n in graph.node:
        c[n.op_type] += 1
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                c += count_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    c += count_nodes(sub)
    return c


def build_model(spec, seed):
    torch.manual_seed(seed)
    model = spec.build()
    perturb_uniform_parameters(model, seed + 4)
    if spec.bn_calibrate is not None:
        randomize_batchnorm(model, seed + 1)
        calibrate_batchnorm(model, spec.bn_calibrate, seed=seed + 2)
    model.eval()
    return model


def export(model, spec, args, path, training=torch.onnx.TrainingMode.PRESERVE):
    grad = torch.enable_grad() if spec.grad_trace else torch.no_grad()
    with grad:
        torch.onnx.export(model, args, path, opset_version=OPSET, do_constant_folding=False,
                          training=training, input_names=spec.input_names,
                          output_names=spec.output_names, dynamic_axes=spec.dynamic_axes)


def tensor_pb(array, name, path):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(array, name).SerializeToString())


def export_one(spec, out_dir, seed, small):
    start = time.time()
    model = build_model(spec, seed)
    args = spec.inputs(torch.Generator().manual_seed(seed + 3))
    if small:
        case_dir = os.path.join(out_dir, spec.name)
        os.makedirs(os.path.join(case_dir, "test_data_set_0"), exist_ok=True)
        path = os.path.join(case_dir, "model.onnx")
    else:
        path = os.path.join(out_dir, spec.name + ".onnx")
    t0 = time.time()
    export(model, spec, args, path)
    seconds = time.time() - t0
    onnx.checker.check_model(path, full_check=True)
    m = onnx.load(path)
    hist = count_nodes(m.graph)
    if small:  # reference case from PyTorch
        with torch.no_grad():
            outs = model(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for i, a in enumerate(args):
            tensor_pb(a.numpy(), spec.input_names[i],
                      os.path.join(case_dir, "test_data_set_0", f"input_{i}.pb"))
        for i, o in enumerate(outs):
            tensor_pb(o.detach().numpy(), spec.output_names[i],
                      os.path.join(case_dir, "test_data_set_0", f"output_{i}.pb"))
    bn = hist.get("BatchNormalization", 0)
    print(f"{spec.name}: {sum(hist.values())} nodes, {os.path.getsize(path) / 1e6:.2f} MB, "
          f"export {seconds:.1f} s (all steps {time.time() - start:.1f} s), "
          f"{len(m.graph.initializer)} initializers, "
          f"BatchNormalization {bn}", flush=True)
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
          flush=True)
    return sum(hist.values())


def check_bn_modes(out_dir):
    """Shows which exporter settings keep BatchNormalization, and in which form."""
    import tempfile
    spec = small_specs()[0]
    args = spec.inputs(torch.Generator().manual_seed(3))
    modes = torch.onnx.TrainingMode
    for training, train_mode in [(modes.EVAL, False), (modes.PRESERVE, False),
                                 (modes.PRESERVE, True), (modes.TRAINING, False)]:
        model = build_model(spec, 0)
        model.train(train_mode)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            export(model, spec, args, path, training=training)
            m = onnx.load(path)
        bns = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
        outs = sorted({len(n.output) for n in bns})
        hist = count_nodes(m.graph)
        print(f"training={training.name:8s} model.train({train_mode!s:5s}): "
              f"BatchNormalization {len(bns)} (outputs per node {outs}), "
              f"Dropout {hist.get('Dropout', 0)}, Conv {hist.get('Conv', 0)}, nodes {sum(hist.values())}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?", help="output folder (default bench/models/, or "
                   "tests/data/models/ with --small)")
    p.add_argument("--small", action="store_true", help="export the tiny test models instead")
    p.add_argument("--only", help="comma-separated model names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--check-bn", action="store_true",
                   help="print how each TrainingMode treats BatchNorm, and exit")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.check_bn:
        check_bn_modes(a.out_dir)
        return 0
    out_dir = a.out_dir or os.path.join(ROOT, "tests/data/models" if a.small else "bench/models")
    os.makedirs(out_dir, exist_ok=True)
    specs = small_specs() if a.small else full_specs()
    if a.only:
        wanted = a.only.split(",")
        if not a.small:
            specs += large_specs()
        unknown = set(wanted) - {s.name for s in specs}
        if unknown:
            p.error(f"unknown model(s): {', '.join(sorted(unknown))}; "
                    f"known: {', '.join(s.name for s in specs)}")
        specs = [s for s in specs if s.name in wanted]
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, opset {OPSET}, into {out_dir}", flush=True)
    for spec in specs:  # one at a time: each full-size export takes a core and a few GiB
        export_one(spec, out_dir, a.seed, a.small)
    return 0


if __name__ == "__main__":
    sys.exit(main())
