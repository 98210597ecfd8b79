"""Shared steps of the real-model suites: weights worth testing, and the three conversions
every float model goes through (PyTorch's order, channels-last, flexible height and width).

Freshly built torchvision models are too easy to match: batch norms hold mean 0 and
variance 1, some classifier heads start at zero (ViT), layer scales at 1e-6 (ConvNeXt). The
weights are made non-trivial first, so a wrong lowering anywhere shows at the output.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from tests.convert.harness import assert_close, convert, run
from torch_nnapi.convert.capture.script import capture_script

TOLERANCE = 1e-4  # relative to the output's magnitude, as the issue asks of real models


def nontrivial_weights(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random batch-norm statistics and affine parameters; parameters a model initializes to
    one repeated value (zero heads, unit norms, tiny layer scales) drawn at random."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if (isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None
                    and m.running_var is not None):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
        for p in model.parameters():
            flat = p.detach().reshape(-1)
            if flat.numel() and bool((flat == flat[0]).all()):
                base = 1.0 if float(flat[0]) == 1.0 else 0.0
                p.copy_(base + torch.randn(p.shape, generator=g) * 0.1)
            elif flat.numel() and float(flat.abs().max()) < 1e-3:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model.eval()


def compare(module, model: nn.Module, x: torch.Tensor, what: str) -> float:
    with torch.no_grad():
        expected = model(x)
    actual = run(module, (x,))
    return assert_close(actual, expected, what, tolerance=TOLERANCE)


def check_float_model(model: nn.Module, size: int, other: tuple[int, int] | None) -> dict:
    """Converts ``model`` (captured once) in PyTorch's order at ``size`` x ``size``, and
    channels-last with flexible height and width, run at ``size`` x ``size`` and at
    ``other`` (height, width; None: a model of one input size, converted channels-last
    without flexible dimensions); every output matches eager. Returns the conversion
    seconds and the worst errors."""
    torch.manual_seed(0)
    x = torch.randn(1, 3, size, size)
    captured = capture_script(model, (x,))  # both conversions lower one captured graph
    static = convert(captured, (x,), nhwc=False)
    results = {"seconds": static.seconds,
               "nchw": compare(static.module, model, x, "output (NCHW)")}
    if other is None:
        flexible = convert(captured, (x,), nhwc=True)
        results["nhwc"] = compare(flexible.module, model, x, "output (NHWC)")
        return results
    flexible = convert(captured, (x,), nhwc=True, flexible={0: [2, 3]})
    results["nhwc"] = compare(flexible.module, model, x, "output (NHWC, flexible)")
    y = torch.randn(1, 3, *other)
    results["flexible"] = compare(flexible.module, model, y,
                                  f"output (NHWC, flexible, {list(y.shape)})")
    return results
