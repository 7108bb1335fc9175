#!/usr/bin/env python3
"""Export small, seeded, real-architecture models to ONNX for comparing libhpf with ONNX Runtime.

    export_models.py OUTDIR [--only SUBSTRING]... [--bench]

Writes OUTDIR/<model>_opset<N>.onnx for every model and opset below (see README.md). The
full-size benchmark models (bert_base, resnet50, mobilenetv2: tens to hundreds of MB, built in
plain torch with random seeded weights; the architecture matters for speed, not the training)
are written only with --bench or when an --only names them. Weights are
drawn from fixed seeds (BatchNorm running statistics included), so a rerun with the same torch
version writes the same models. Each file carries metadata_props the comparison script reads:
  hpf.dim.<SYMBOL>=<VALUE>        the size compare_ort.py gives a symbolic dimension
  hpf.range.<INPUT>=<LOW>:<HIGH>  the half-open value range of an integer input
  hpf.covers=<TEXT>               what the model exercises
Needs torch (Debian python3-torch 1.13 was used) and onnx.
"""
import argparse
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import onnx

MAX_BYTES = 2 * 1024 * 1024


def randomize_(model, seed):
    """Seeded weights, and BatchNorm statistics that are not the identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / (fan_in ** 0.5))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1 + (1.0 if name.endswith("weight") else 0.0))
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
    model.eval()
    return model


# ---------------------------------------------------------------------------------------------
# CNN detector: BN + ReLU backbone, SE block (HardSigmoid gate, HardSwish), FPN top-down path
# (nearest nn.Upsample, bilinear F.interpolate -> Resize / Upsample at opset 9), a ConvTranspose
# upsampling head (BatchNormalization after it survives the Conv+BN fusion), Sigmoid heads.

class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, s=1, groups=1, act=nn.ReLU):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), act())


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.relu(self.fc1(s))
        s = F.hardsigmoid(self.fc2(s))
        return x * s


class Detector(nn.Module):
    def __init__(self, num_classes=3, sized_branch=False):
        super().__init__()
        self.sized_branch = sized_branch   # Resize to an explicit size, align_corners=True
        self.stem = ConvBNAct(3, 16, 3, 2)                                   # 32x32
        self.c2 = nn.Sequential(ConvBNAct(16, 24, 3, 2, act=nn.Hardswish),   # 16x16
                                SqueezeExcite(24))
        self.c3 = ConvBNAct(24, 32, 3, 2, act=nn.Hardswish)                  # 8x8
        self.c4 = ConvBNAct(32, 48, 3, 2)                                    # 4x4
        self.lat4 = nn.Conv2d(48, 32, 1)
        self.lat3 = nn.Conv2d(32, 32, 1)
        self.lat2 = nn.Conv2d(24, 32, 1)
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.smooth = nn.Conv2d(32, 32, 3, 1, 1)
        self.deconv = nn.ConvTranspose2d(32, 16, 4, 2, 1)                    # 16 -> 32
        self.deconv_bn = nn.BatchNorm2d(16)
        self.box = nn.Conv2d(16, 4, 3, 1, 1)
        self.score = nn.Conv2d(16, num_classes, 1)

    def forward(self, x):
        x = self.stem(x)
        c2 = self.c2(x)
        c3 = self.c3(c2)
        c4 = self.c4(c3)
        p4 = self.lat4(c4)
        p3 = self.lat3(c3) + self.up_nearest(p4)
        p2 = self.lat2(c2) + F.interpolate(p3, scale_factor=2.0, mode="bilinear", align_corners=False)
        if self.sized_branch:
            p2 = p2 + F.interpolate(p4, size=(16, 16), mode="bilinear", align_corners=True)
            p2 = p2 + F.interpolate(c3, size=(16, 16), mode="nearest")[:, :32]
        p2 = F.relu(self.smooth(p2))
        h = F.relu(self.deconv_bn(self.deconv(p2)))
        boxes = torch.sigmoid(self.box(h))
        scores = torch.sigmoid(self.score(h))
        return boxes, scores


# ---------------------------------------------------------------------------------------------
# Transformer recogniser: token + positional embedding, 2 batch_first encoder layers (GELU),
# final LayerNorm, per-token classifier; batch and sequence are symbolic.

class Recogniser(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4, layers=2, max_len=32, classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.cls = nn.Linear(d, classes)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos[:, : tokens.shape[1]]
        x = self.encoder(x)
        return self.cls(self.norm(x))


# ---------------------------------------------------------------------------------------------
# Recurrent models with data-dependent control flow. The LSTM/GRU part is traced; the scripted
# helpers keep their `if` (-> ONNX If) and their `for` with a value-dependent trip count
# (-> ONNX Loop).

@torch.jit.script
def sign_gate(h: torch.Tensor) -> torch.Tensor:
    if bool(h.sum() > 0):
        y = h * 0.5 + 1.0
    else:
        y = torch.tanh(h) - 0.25
    return y


@torch.jit.script
def repeat_smooth(h: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    y = h
    for _ in range(int(steps)):
        y = 0.5 * (y + torch.tanh(y))
    return y


class RecurrentLSTM(nn.Module):
    def __init__(self, feat=8, hidden=16, classes=5, with_loop=False):
        super().__init__()
        self.rnn = nn.LSTM(feat, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, classes)
        self.with_loop = with_loop

    def forward(self, x):
        out, (h, c) = self.rnn(x)
        y = sign_gate(out)
        if self.with_loop:
            steps = (x.abs().sum() > 0).long() * 3      # value-dependent trip count (3)
            y = repeat_smooth(y, steps)
        return self.head(y), h


class ControlFlow(nn.Module):
    """If and Loop without a recurrent layer, so that they are reported on their own."""
    def __init__(self, feat=8, hidden=16, classes=5):
        super().__init__()
        self.inp = nn.Linear(feat, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        y = sign_gate(self.inp(x))
        steps = (x.abs().sum() > 0).long() * 3
        return self.head(repeat_smooth(y, steps))


class RecurrentGRU(nn.Module):
    def __init__(self, feat=8, hidden=16, classes=5):
        super().__init__()
        self.rnn = nn.GRU(feat, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        out, h = self.rnn(x)
        return self.head(sign_gate(out)), h


# ---------------------------------------------------------------------------------------------
# Classifiers: ResNet-like (residual Add, MaxPool, BN after the Add, GlobalAveragePool, Flatten,
# Gemm) and MobileNet-like (depthwise conv, ReLU6 -> Clip, inverted residual).

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = ConvBNAct(cin, cout, 3, stride)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        self.post_bn = nn.BatchNorm2d(cout)     # after the Add: not fused into a Conv

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = self.bn2(self.conv2(self.conv1(x)))
        return F.relu(self.post_bn(y + idt))


class TinyResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvBNAct(3, 16, 3, 1)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(16, 16, 1)
        self.layer2 = BasicBlock(16, 32, 2)
        self.layer3 = BasicBlock(32, 64, 2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.gap(x), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            ConvBNAct(cin, mid, 1, act=nn.ReLU6),
            ConvBNAct(mid, mid, 3, stride, groups=mid, act=nn.ReLU6),   # depthwise
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class TinyMobileNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            ConvBNAct(3, 16, 3, 2, act=nn.ReLU6),
            InvertedResidual(16, 16, 1, 1),
            InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4),
            InvertedResidual(24, 32, 2, 4),
            ConvBNAct(32, 64, 1, act=nn.ReLU6))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        x = self.features(x)
        x = x.mean([2, 3])
        return self.classifier(x)


# ---------------------------------------------------------------------------------------------
# Full-size benchmark models (bench/ort_e2e.py), written only with --bench or a matching --only.
# Plain torch (no torchvision in Debian 12): the published architectures with random weights
# from a fixed seed (randomize_), which is what latency and memory depend on.

class BertBaseEncoder(nn.Module):
    """BERT-base: token + position embeddings, LayerNorm, 12 post-LN encoder layers (hidden 768,
    12 heads, FFN 3072, exact GELU), a tanh pooler on the first token and a 2-way classifier.
    Outputs the last hidden state and the logits, like libhpf's builtin:bert-base."""
    def __init__(self, vocab=30522, d=768, heads=12, ffn=3072, layers=12, max_len=512, labels=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=ffn, dropout=0.0,
                                           activation="gelu", batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)
        self.cls = nn.Linear(d, labels)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tok(input_ids) + self.pos(positions))
        h = self.encoder(x)
        return h, self.cls(torch.tanh(self.pooler(h[:, 0])))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = ConvBNAct(cin, width, 1)
        self.conv2 = ConvBNAct(width, width, 3, stride)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        return F.relu(self.bn3(self.conv3(self.conv2(self.conv1(x)))) + idt)


class ResNet50(nn.Module):
    """torchvision's resnet50: 7x7 stem, max pool, bottleneck stages [3, 4, 6, 3] of widths
    64..512 (stride on the 3x3 conv, v1.5), global average pool, 1000-way fc."""
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = ConvBNAct(3, 64, 7, 2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], 64
        for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for k in range(n):
                blocks.append(Bottleneck(cin, width, stride if k == 0 else 1))
                cin = width * Bottleneck.expansion
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.pool(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MobileNetV2(nn.Module):
    """torchvision's mobilenet_v2 (width 1.0): inverted residual settings (t, c, n, s) as in the
    paper, ReLU6, 1280-channel head, 1000-way classifier."""
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [ConvBNAct(3, 32, 3, 2, act=nn.ReLU6)], 32
        for t, c, n, s in self.SETTINGS:
            for k in range(n):
                layers.append(InvertedResidual(cin, c, s if k == 0 else 1, t))
                cin = c
        layers.append(ConvBNAct(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.classifier(self.features(x).mean([2, 3]))


# ---------------------------------------------------------------------------------------------

IMG = (1, 3, 64, 64)

# name, factory, seed, example inputs, input names, output names, dynamic axes, opsets,
# extra metadata, what it covers
MODELS = [
    dict(name="detector", make=Detector, seed=1, args=lambda: (torch.randn(IMG),),
         inputs=["image"], outputs=["boxes", "scores"], dynamic=None, opsets=[9, 10, 11, 13, 17],
         covers="Conv+BN(+fused) ReLU HardSigmoid HardSwish (x*HardSigmoid(x) before opset 14) "
                "SE GlobalAveragePool Mul, FPN Resize nearest+linear (Upsample at opset 9), "
                "ConvTranspose+BatchNormalization, Sigmoid heads"),
    dict(name="detector_sized", make=lambda: Detector(sized_branch=True), seed=8,
         args=lambda: (torch.randn(IMG),), inputs=["image"], outputs=["boxes", "scores"],
         dynamic=None, opsets=[11, 13, 17],
         covers="the detector plus Resize to explicit sizes (linear align_corners, nearest) "
                "and a channel Slice"),
    dict(name="recogniser", make=Recogniser, seed=2,
         args=lambda: (torch.randint(0, 64, (2, 7)),),
         inputs=["tokens"], outputs=["logits"],
         dynamic={"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
         opsets=[11, 13, 17], meta={"hpf.dim.batch": "2", "hpf.dim.seq": "7", "hpf.range.tokens": "0:64"},
         covers="Gather embedding, positional Slice by Shape, MultiheadAttention (MatMul, "
                "Transpose, Reshape, Softmax), GELU (Erf), LayerNorm (decomposed < 17, "
                "LayerNormalization at 17), symbolic batch/seq"),
    dict(name="lstm_if", make=RecurrentLSTM, seed=3, args=lambda: (torch.randn(2, 6, 8),),
         inputs=["seq"], outputs=["logits", "h_n"], dynamic=None, opsets=[11, 14],
         covers="LSTM, If (scripted data-dependent branch)"),
    dict(name="lstm_if_loop", make=lambda: RecurrentLSTM(with_loop=True), seed=4,
         args=lambda: (torch.randn(2, 6, 8),),
         inputs=["seq"], outputs=["logits", "h_n"], dynamic=None, opsets=[13],
         covers="LSTM, If, Loop (scripted value-dependent trip count)"),
    dict(name="control_if_loop", make=ControlFlow, seed=9, args=lambda: (torch.randn(2, 8),),
         inputs=["x"], outputs=["y"], dynamic=None, opsets=[11, 16],
         covers="If and Loop alone (Gemm/MatMul around them), no recurrent layer"),
    dict(name="gru_if", make=RecurrentGRU, seed=5, args=lambda: (torch.randn(2, 6, 8),),
         inputs=["seq"], outputs=["logits", "h_n"], dynamic=None, opsets=[11, 14],
         covers="bidirectional GRU (linear_before_reset), If"),
    dict(name="resnet", make=TinyResNet, seed=6, args=lambda: (torch.randn(IMG),),
         inputs=["image"], outputs=["logits"], dynamic=None, opsets=[9, 13],
         covers="Conv(+fused BN) Relu, residual Add, BatchNormalization after Add, MaxPool, "
                "GlobalAveragePool, Flatten, Gemm"),
    dict(name="mobilenet", make=TinyMobileNet, seed=7, args=lambda: (torch.randn(IMG),),
         inputs=["image"], outputs=["logits"], dynamic=None, opsets=[9, 11, 17],
         covers="depthwise Conv (group=C), ReLU6 -> Clip (min/max attributes at opset 9, "
                "inputs from 11), inverted residual Add, ReduceMean, Gemm"),
    # Benchmark models (bench=True): no size cap, exported only with --bench or a matching --only.
    dict(name="bert_base", make=BertBaseEncoder, seed=11, args=lambda: (torch.randint(0, 30522, (1, 128)),),
         inputs=["input_ids"], outputs=["last_hidden_state", "logits"], dynamic=None, opsets=[17], bench=True,
         meta={"hpf.range.input_ids": "0:30522"},
         covers="BERT-base encoder, sequence 128: 12 post-LN layers, hidden 768, 12 heads, FFN 3072, GELU (Erf), "
                "LayerNormalization, pooler and classifier; random seeded weights"),
    dict(name="resnet50", make=ResNet50, seed=12, args=lambda: (torch.randn(1, 3, 224, 224),),
         inputs=["image"], outputs=["logits"], dynamic=None, opsets=[17], bench=True,
         covers="ResNet-50 v1.5 at 224x224 (torchvision's architecture, random seeded weights)"),
    dict(name="mobilenetv2", make=MobileNetV2, seed=13, args=lambda: (torch.randn(1, 3, 224, 224),),
         inputs=["image"], outputs=["logits"], dynamic=None, opsets=[17], bench=True,
         covers="MobileNetV2 1.0 at 224x224 (torchvision's architecture, random seeded weights)"),
]


def export_one(spec, opset, outdir):
    torch.manual_seed(spec["seed"])
    model = randomize_(spec["make"](), spec["seed"])
    args = spec["args"]()
    path = os.path.join(outdir, f"{spec['name']}_opset{opset}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, opset_version=opset,
                          input_names=spec["inputs"], output_names=spec["outputs"],
                          dynamic_axes=spec["dynamic"], do_constant_folding=True)
    m = onnx.load(path)
    meta = dict(spec.get("meta", {}))
    meta["hpf.covers"] = spec["covers"]
    meta["hpf.seed"] = str(spec["seed"])
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(m)
    onnx.save(m, path)
    size = os.path.getsize(path)
    if size > MAX_BYTES and not spec.get("bench"):
        raise RuntimeError(f"{path} is {size} bytes, over {MAX_BYTES}")
    ops = sorted({n.op_type for n in m.graph.node})
    return path, size, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--only", action="append", default=[], help="export models whose name contains this")
    ap.add_argument("--bench", action="store_true", help="also the full-size benchmark models")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    failed = 0
    for spec in MODELS:
        if a.only and not any(s in spec["name"] for s in a.only):
            continue
        if spec.get("bench") and not (a.bench or a.only):
            continue
        for opset in spec["opsets"]:
            try:
                path, size, ops = export_one(spec, opset, a.outdir)
                print(f"{os.path.basename(path):28s} {size:8d} B  {' '.join(ops)}")
            except Exception as e:  # keep going: report every model that torch cannot export
                failed += 1
                msg = str(e).split(" [Caused by")[0].strip().splitlines()
                print(f"{spec['name']}_opset{opset}: EXPORT FAILED: {type(e).__name__}: "
                      f"{msg[0] if msg else ''}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
