"""Model zoo for converter tests, written here (torchvision cannot be installed): the
architectures of MobileNetV2, ResNet-18, MobileNetV3-small and ShuffleNetV2 as torchvision
defines them, a U-Net, and a small transformer encoder."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _divisible(v: float, divisor: int = 8) -> int:
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, act=nn.ReLU6):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act(inplace=True))
        super().__init__(*layers)


# ------------------------------------------------------------------------------ MobileNetV2


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act=nn.ReLU6):
        super().__init__()
        hidden = int(round(cin * expand))
        self.use_residual = stride == 1 and cin == cout
        layers: list[nn.Module] = [] if expand == 1 else [ConvBNAct(cin, hidden, 1, act=act)]
        layers += [ConvBNAct(hidden, hidden, 3, stride, groups=hidden, act=act),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_residual else self.conv(x)


class ContiguousReLU6(nn.ReLU6):
    """ReLU6 that makes its input contiguous first. PyTorch's quantized hardtanh returns
    wrong values for a channels-last input (the layout qnnpack convolutions produce): it
    keeps the data in channels-last order but labels the result contiguous. Quantized eager
    references use this so that PyTorch's own answer is right; it changes nothing else."""

    def forward(self, x):
        return super().forward(x.contiguous())


class MobileNetV2(nn.Module):
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes=1000, width=1.0, act=nn.ReLU6):
        super().__init__()
        cin = _divisible(32 * width)
        last = _divisible(1280 * max(1.0, width))
        features: list[nn.Module] = [ConvBNAct(3, cin, stride=2, act=act)]
        for t, c, n, s in self.SETTINGS:
            cout = _divisible(c * width)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t, act))
                cin = cout
        features.append(ConvBNAct(cin, last, 1, act=act))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


# ------------------------------------------------------------------------------ ResNet-18


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride, inplace_add=True):
        super().__init__()
        self.inplace_add = inplace_add
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.inplace_add:
            out += identity
        else:
            out = out + identity
        return self.relu(out)


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000, inplace_add=True):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride, inplace_add),
                                        BasicBlock(cout, cout, 1, inplace_add)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ------------------------------------------------------------------------------ MobileNetV3


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return s * x


class V3Block(nn.Module):
    def __init__(self, cin, k, expanded, cout, se, act, stride):
        super().__init__()
        activation = nn.Hardswish if act == "HS" else nn.ReLU
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(ConvBNAct(cin, expanded, 1, act=activation))
        layers.append(ConvBNAct(expanded, expanded, k, stride, groups=expanded, act=activation))
        if se:
            layers.append(SqueezeExcitation(expanded, _divisible(expanded // 4)))
        layers.append(ConvBNAct(expanded, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.use_residual = stride == 1 and cin == cout

    def forward(self, x):
        out = self.block(x)
        return out + x if self.use_residual else out


class MobileNetV3Small(nn.Module):
    CONFIG = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2),
              (24, 3, 88, 24, False, "RE", 1), (24, 5, 96, 40, True, "HS", 2),
              (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
              (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1),
              (48, 5, 288, 96, True, "HS", 2), (96, 5, 576, 96, True, "HS", 1),
              (96, 5, 576, 96, True, "HS", 1)]

    def __init__(self, num_classes=1000):
        super().__init__()
        layers: list[nn.Module] = [ConvBNAct(3, 16, 3, 2, act=nn.Hardswish)]
        layers += [V3Block(*c) for c in self.CONFIG]
        layers.append(ConvBNAct(96, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(inplace=True),
                                        nn.Dropout(0.2), nn.Linear(1024, num_classes))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


# ------------------------------------------------------------------------------ ShuffleNetV2


def channel_shuffle(x, groups: int):
    batch, channels, height, width = x.size()
    per_group = channels // groups
    x = x.view(batch, groups, per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batch, -1, height, width)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        branch = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
                nn.Conv2d(cin, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(True))
        else:
            self.branch1 = nn.Sequential()
        first = cin if stride > 1 else branch
        self.branch2 = nn.Sequential(
            nn.Conv2d(first, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(True),
            nn.Conv2d(branch, branch, 3, stride, 1, groups=branch, bias=False),
            nn.BatchNorm2d(branch),
            nn.Conv2d(branch, branch, 1, bias=False), nn.BatchNorm2d(branch), nn.ReLU(True))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, channels=(24, 48, 96, 192, 1024), repeats=(4, 8, 4), num_classes=1000):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1, bias=False),
                                   nn.BatchNorm2d(channels[0]), nn.ReLU(True))
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = channels[0], []
        for n, cout in zip(repeats, channels[1:4], strict=True):
            units = [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*units))
            cin = cout
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = nn.Sequential(nn.Conv2d(cin, channels[-1], 1, bias=False),
                                   nn.BatchNorm2d(channels[-1]), nn.ReLU(True))
        self.fc = nn.Linear(channels[-1], num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))


# ------------------------------------------------------------------------------ U-Net


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Four levels; the two deepest upsample with bilinear interpolation, the others with
    transposed convolutions, so both paths are covered."""

    def __init__(self, cin=3, classes=2, base=8):
        super().__init__()
        c = [base * 2 ** i for i in range(5)]
        self.inc = DoubleConv(cin, c[0])
        self.downs = nn.ModuleList(DoubleConv(c[i], c[i + 1]) for i in range(4))
        self.up_convs = nn.ModuleList([nn.Conv2d(c[4], c[3], 1), nn.Conv2d(c[3], c[2], 1),
                                       nn.ConvTranspose2d(c[2], c[1], 2, 2),
                                       nn.ConvTranspose2d(c[1], c[0], 2, 2)])
        self.ups = nn.ModuleList(DoubleConv(c[3 - i] * 2, c[3 - i]) for i in range(4))
        self.outc = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(F.max_pool2d(skips[-1], 2)))
        y = skips.pop()
        for i, (up, block) in enumerate(zip(self.up_convs, self.ups, strict=True)):
            if i < 2:
                y = up(F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False))
            else:
                y = up(y)
            y = block(torch.cat([skips.pop(), y], dim=1))
        return self.outc(y)


# ------------------------------------------------------------------------------ transformer


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        head = d // self.heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, n, self.heads, head).transpose(1, 2)
        k = k.view(b, n, self.heads, head).transpose(1, 2)
        v = v.view(b, n, self.heads, head).transpose(1, 2)
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(head), dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.1),
                                nn.Linear(hidden, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.ff(x))


class TransformerEncoder(nn.Module):
    """Token ids (int64) -> embeddings + positions -> encoder layers -> mean-pooled logits."""

    def __init__(self, vocab=100, dim=32, heads=4, hidden=64, layers=2, max_len=32, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.1)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, hidden) for _ in range(layers))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(1))


def randomize_batchnorm(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial running statistics, so folded batch norms are really tested."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert m.running_mean is not None and m.running_var is not None  # tracked (default)
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()


# ------------------------------------------------------------------------ sequence models


class TextClassifier(nn.Module):
    """Token ids -> embedding -> bidirectional LSTM -> both directions' last states -> logits."""

    def __init__(self, vocabulary: int = 50, width: int = 16, classes: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, batch_first=True, bidirectional=True,
                            dropout=0.1)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.embed(tokens))
        return self.head(torch.cat([h[-2], h[-1]], dim=1))


class Seq2Seq(nn.Module):
    """A GRU encoder whose final state starts a GRU decoder (teacher forcing)."""

    def __init__(self, vocabulary: int = 30, width: int = 12):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.encoder = nn.GRU(width, width, batch_first=True)
        self.decoder = nn.GRU(width, width, batch_first=True)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, source, target):
        _, state = self.encoder(self.embed(source))
        decoded, _ = self.decoder(self.embed(target), state)
        return F.log_softmax(self.out(decoded), dim=-1)


class SpeechTagger(nn.Module):
    """Audio features -> strided Conv1d front end -> 2-layer LSTM -> per-frame class scores."""

    def __init__(self, features: int = 10, width: int = 16, classes: int = 5):
        super().__init__()
        self.frontend = nn.Sequential(nn.Conv1d(features, width, 3, stride=2, padding=1),
                                      nn.ReLU())
        self.lstm = nn.LSTM(width, width, num_layers=2)
        self.head = nn.Linear(width, classes)

    def forward(self, audio):  # [batch, features, frames]
        frames = self.frontend(audio).permute(2, 0, 1)  # [time, batch, width]
        encoded, _ = self.lstm(frames)
        return self.head(encoded).log_softmax(-1)
