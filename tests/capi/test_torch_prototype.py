"""PyTorch's own NNAPI path on Linux: models converted by PyTorch's prototype converter
(``torch.backends._nnapi.prepare.convert_model_to_nnapi``) run through torch's NNAPI runtime
(``torch.classes._nnapi.Compilation``), which loads this libneuralnetworks.so, and match eager
PyTorch. Float, quantized, NHWC and runtime-sized inputs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.backends._nnapi.prepare import convert_model_to_nnapi  # noqa: E402

pytestmark = [pytest.mark.usefixtures("qnnpack")]


def nhwc(t: torch.Tensor) -> torch.Tensor:
    """The converter's marker for an input it should take as NHWC."""
    t = t.clone().contiguous(memory_format=torch.channels_last)
    t.nnapi_nhwc = True  # type: ignore[attr-defined]  # the marker the converter reads
    return t


def quantized(t: torch.Tensor, scale: float = 1 / 16, zero_point: int = 128) -> torch.Tensor:
    return torch.quantize_per_tensor(t, scale, zero_point, torch.quint8)


def convert(module: nn.Module, args: list, convert_args: list | None = None):
    """The module converted by PyTorch's prototype converter."""
    module.eval()
    traced = torch.jit.trace(module, args)
    return convert_model_to_nnapi(traced, convert_args or args)


def check(module: nn.Module, args: list, convert_args: list | None = None) -> None:
    with torch.no_grad():
        converted = convert(module, args, convert_args)
        expected, actual = module(*args), converted(*args)
    if isinstance(expected, torch.Tensor):
        expected, actual = (expected,), (actual,)
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual, strict=True):
        assert got.shape == want.shape
        if want.is_quantized:
            assert (got.q_scale(), got.q_zero_point()) == (want.q_scale(), want.q_zero_point())
            difference = got.int_repr().int() - want.int_repr().int()
            assert difference.abs().max() <= 1, f"{difference.abs().max()} quanta apart"
        else:
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def quantize_model(module: nn.Module, calibration: torch.Tensor, fuse=()) -> nn.Module:
    """Post-training static quantization of ``module`` (which takes quantized inputs)."""
    module.eval()
    if fuse:
        module = torch.ao.quantization.fuse_modules(module, [list(fuse)])
    module.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    module = torch.ao.quantization.prepare(module)
    module(calibration)
    return torch.ao.quantization.convert(module)


def seeded(factory):
    torch.manual_seed(29)
    return factory()


CONVOLUTIONS = {
    "3x3-relu": (lambda: nn.Sequential(nn.Conv2d(4, 8, 3), nn.ReLU()), (2, 4, 10, 10)),
    "3x3-pad1-stride2-nobias": (lambda: nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False),
                                (1, 4, 9, 9)),
    "5x5": (lambda: nn.Conv2d(3, 4, 5), (1, 3, 12, 12)),
    "1x1": (lambda: nn.Conv2d(8, 4, 1), (2, 8, 6, 6)),
    "depthwise": (lambda: nn.Conv2d(4, 4, 3, groups=4), (1, 4, 8, 8)),
}


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_float_convolution(name, layout):
    factory, shape = CONVOLUTIONS[name]
    model = seeded(factory)
    x = torch.randn(shape)
    check(model, [nhwc(x) if layout == "nhwc" else x])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_float_convolution_of_any_image_size(layout):
    model = seeded(lambda: nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU()))
    x, open_size = torch.randn(2, 4, 7, 11), torch.zeros(0, 4, 0, 0)
    if layout == "nhwc":
        x, open_size = nhwc(x), nhwc(open_size)
    check(model, [x], convert_args=[open_size])


def test_float_linear():
    check(seeded(lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU())), [torch.randn(3, 16)])
    check(seeded(lambda: nn.Linear(16, 8)), [torch.randn(5, 16)],
          convert_args=[torch.zeros(0, 16)])


def test_relu():
    check(nn.ReLU(), [torch.randn(2, 3, 4)])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("name", ["3x3-relu", "1x1", "depthwise"])
def test_quantized_convolution(name, layout):
    factory, shape = CONVOLUTIONS[name]
    x = torch.randn(shape)
    fuse = ("0", "1") if name.endswith("relu") else ()
    model = seeded(lambda: factory() if fuse else nn.Sequential(factory()))
    model = quantize_model(model, x, fuse)
    qx = quantized(x)
    check(model, [nhwc(qx) if layout == "nhwc" else qx])


def test_quantized_linear():
    torch.manual_seed(29)
    linear = torch.ao.nn.quantized.Linear(32, 16)
    weight = torch.quantize_per_tensor(torch.randn(16, 32), 0.125, 0, torch.qint8)
    linear.set_weight_bias(weight, torch.randn(16))
    check(linear, [quantized(torch.randn(2, 32), 0.05, 130)])


class MultiplyAdd(nn.Module):
    def forward(self, x, y):
        return x * y + x


class SumAndDifference(nn.Module):
    def forward(self, x, y) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, x - y


def test_elementwise_float():
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    check(MultiplyAdd(), [x, y])
    check(MultiplyAdd(), [x, y], convert_args=[torch.zeros(0, 3), torch.zeros(0, 3)])
    check(SumAndDifference(), [x, y])


def test_elementwise_nhwc_broadcast():
    check(MultiplyAdd(), [nhwc(torch.randn(2, 3, 4, 4)), torch.randn(1, 3, 1, 1)])


def test_elementwise_quantized():
    functional = torch.ao.nn.quantized.QFunctional()
    functional.scale, functional.zero_point = 0.5, 120

    class QuantizedAdd(nn.Module):
        def forward(self, x, y):
            return functional.add(x, y)

    x, y = quantized(torch.randn(1, 8), 0.25, 128), quantized(torch.randn(1, 8), 0.25, 128)
    check(QuantizedAdd(), [x, y])


def test_importing_torch_nnapi_is_the_only_step():
    """A fresh process with no library path set: torch first, then torch_nnapi, then a
    converted model runs."""
    code = (
        "import torch\n"
        "import torch_nnapi\n"
        "from torch.backends._nnapi.prepare import convert_model_to_nnapi\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x, y):\n"
        "        return x * y + y\n"
        "x, y = torch.randn(3, 5), torch.randn(3, 5)\n"
        "m = convert_model_to_nnapi(torch.jit.trace(M().eval(), (x, y)), [x, y])\n"
        "assert torch.allclose(m(x, y), x * y + y)\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LIBNEURALNETWORKS_PATH")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
