"""Models with operations NNAPI cannot run, for the CPU fallback tests.

``torch_nnapi_tests::wiggle`` and friends are custom operators defined here with
``torch.library``: no lowering will ever exist for them, so they stay on the CPU whatever
the converter learns. A process that loads a saved module using them imports this module
first (as an app registers its custom operators).
"""

from __future__ import annotations

import torch
import torch.nn as nn


@torch.library.custom_op("torch_nnapi_tests::wiggle", mutates_args=())
def wiggle(x: torch.Tensor) -> torch.Tensor:
    """An element-wise op no lowering knows."""
    return torch.sin(x * 3.0) * 0.5 + x


@wiggle.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("torch_nnapi_tests::positive", mutates_args=())
def positive(x: torch.Tensor) -> torch.Tensor:
    """A bool tensor made on the CPU."""
    return x > 0


@positive.register_fake
def _(x):
    return torch.empty_like(x, dtype=torch.bool)


@torch.library.custom_op("torch_nnapi_tests::order", mutates_args=())
def order(x: torch.Tensor) -> torch.Tensor:
    """int64 indices made on the CPU (the channels sorted by their first value)."""
    return torch.argsort(x[0, :, 0, 0])


@order.register_fake
def _(x):
    return torch.empty(x.shape[1], dtype=torch.long)


def _qwiggle(x: torch.Tensor) -> torch.Tensor:
    """A quantized tensor in, a quantized tensor out with the same scale and zero point."""
    y = wiggle(x.dequantize())
    return torch.quantize_per_tensor(y, x.q_scale(), x.q_zero_point(), torch.quint8)


# custom_op registers CPU kernels only; a quantized kernel needs the QuantizedCPU key
_LIBRARY = torch.library.Library("torch_nnapi_tests", "FRAGMENT")
_LIBRARY.define("qwiggle(Tensor x) -> Tensor")
_LIBRARY.impl("qwiggle", _qwiggle, "QuantizedCPU")
_LIBRARY.impl("qwiggle", lambda x: torch.sin(x * 3.0) * 0.5 + x, "CPU")  # calibration


def conv(cin: int, cout: int, k: int = 3) -> nn.Module:
    return nn.Conv2d(cin, cout, k, padding=k // 2)


class AtStart(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = conv(3, 8), conv(8, 8)

    def forward(self, x):
        return self.b(torch.relu(self.a(torch.ops.torch_nnapi_tests.wiggle(x))))


class InTheMiddle(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = conv(3, 8), conv(8, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        return self.b(torch.ops.torch_nnapi_tests.wiggle(y)).sigmoid()


class AtTheEnd(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = conv(3, 8)

    def forward(self, x):
        return torch.ops.torch_nnapi_tests.wiggle(torch.relu(self.a(x)) * 2.0)


class ParallelBranches(nn.Module):
    """One branch goes through the CPU, the other stays on NNAPI; both meet again."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = conv(3, 8), conv(3, 8), conv(8, 8), conv(8, 4)

    def forward(self, x):
        left = torch.ops.torch_nnapi_tests.wiggle(self.a(x))
        right = self.c(torch.relu(self.b(x)))
        return self.d(left + right)


class Residual(nn.Module):
    """Residual blocks whose inner path runs an op on the CPU."""

    def __init__(self, blocks: int = 2):
        super().__init__()
        self.stem = conv(3, 8)
        self.inner = nn.ModuleList(conv(8, 8) for _ in range(blocks))

    def forward(self, x):
        y = torch.relu(self.stem(x))
        for layer in self.inner:
            y = torch.relu(y + layer(torch.ops.torch_nnapi_tests.wiggle(y)))
        return y


class Classifier(nn.Module):
    """Convolutions, a CPU op, pooling, flatten and a linear layer (flexible H and W)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = conv(3, 8), conv(8, 16)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = torch.ops.torch_nnapi_tests.wiggle(torch.relu(self.a(x)))
        y = torch.relu(self.b(y)).mean((2, 3))
        return self.fc(y)


class Masked(nn.Module):
    """A bool mask made on the CPU selects on NNAPI; int64 indices too."""

    def forward(self, x):
        mask = torch.ops.torch_nnapi_tests.positive(x)
        chosen = torch.where(mask, x * 2.0, x - 1.0)
        idx = torch.ops.torch_nnapi_tests.order(chosen)
        return torch.index_select(chosen, 1, idx) * 0.5, chosen.argmax(1)


class NonZero(nn.Module):
    """nonzero's output size depends on the data: what follows stays on the CPU."""

    def __init__(self):
        super().__init__()
        self.a = conv(3, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        idx = torch.nonzero(y.flatten() > 0.5)
        return y * 2.0, idx.float() * 3.0


class QuantizedBlocks(nn.Module):
    """Quantized convolutions around a quantized op the CPU runs."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.a, self.b = conv(3, 8), conv(8, 8)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        y = torch.relu(self.a(self.quant(x)))
        y = torch.ops.torch_nnapi_tests.qwiggle(y)
        return self.dequant(self.b(y))


def quantized_blocks(example: torch.Tensor) -> nn.Module:
    """QuantizedBlocks, quantized (qnnpack, per-tensor weights) after calibration."""
    model = QuantizedBlocks().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    with torch.no_grad():
        for _ in range(4):
            model(example + 0.1 * torch.randn_like(example))
    torch.ao.quantization.convert(model, inplace=True)
    return model


def randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    """Deterministic weights, the model in eval mode."""
    torch.manual_seed(seed)
    for p in model.parameters():
        nn.init.normal_(p, std=0.3)
    return model.eval()
