"""The models of PyTorch's own NNAPI test (test/test_nnapi.py): for each one the prototype
converter (torch.backends._nnapi) converts, torch-nnapi converts too, and the result matches
eager PyTorch, for the same inputs, layouts (``nnapi_nhwc``) and flexible dimensions (the
prototype's zero-sized conversion arguments; ``flexible`` here)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.backends._nnapi.prepare import convert_model_to_nnapi

from .harness import Fn, as_list, assert_close, convert, run

pytestmark = [pytest.mark.usefixtures("qnnpack")]


class Case(NamedTuple):
    # Factories, called with no arguments (``...``: lambdas bind loop values as defaults)
    model: Callable[..., nn.Module]  # the module under test
    inputs: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]  # the example inputs
    flexible: dict | None = None  # dimensions the prototype was given as 0


def nhwc(t: torch.Tensor) -> torch.Tensor:
    t = t.clone().contiguous(memory_format=torch.channels_last)
    t.nnapi_nhwc = True  # type: ignore[attr-defined]  # the marker the converter reads
    return t


def q(values, scale=0.03, zero_point=128) -> torch.Tensor:
    return torch.quantize_per_tensor(torch.as_tensor(values, dtype=torch.float32), scale,
                                     zero_point, torch.quint8)


def image(*shape) -> torch.Tensor:
    torch.manual_seed(29)
    return torch.randn(*shape)


def quantized_module(module: nn.Module, x: torch.Tensor) -> nn.Module:
    """Eager post-training quantization with qnnpack, as the PyTorch test does."""
    model = nn.Sequential(module).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    model = torch.ao.quantization.prepare(model)
    model(x)
    return torch.ao.quantization.convert(model)


def prelu4() -> nn.Module:
    m = nn.PReLU(4)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    return m


def _layouts(name: str, make):
    """float, float-nhwc, quant, quant-nhwc variants of an image input (as the test)."""
    return {f"{name}-float": lambda: make(), f"{name}-float-nhwc": lambda: nhwc(make()),
            f"{name}-quant": lambda: q(make()), f"{name}-quant-nhwc": lambda: nhwc(q(make()))}


def _binary(op):
    return Fn(lambda a, b: op(a, b))


CASES: dict[str, Case] = {
    "prelu": Case(nn.PReLU, lambda: torch.tensor([[1.0, -1.0, 2.0, -2.0]])[..., None, None]),
    "prelu-multi-nhwc": Case(prelu4,
                             lambda: nhwc(torch.tensor([[1.0, -1.0, 2.0, -2.0]])[..., None, None])),
    "prelu-flexible": Case(prelu4, lambda: nhwc(image(1, 4, 3, 3)), {0: [2, 3]}),
    "quantize": Case(lambda: torch.ao.nn.quantized.Quantize(0.25, 2, torch.quint8),
                     lambda: nhwc(torch.tensor([[[[1.0]], [[2.0]]]]))),
    "dequantize": Case(torch.ao.nn.quantized.DeQuantize,
                       lambda: nhwc(q([[[[1.0]], [[2.0]]]], 0.25, 2))),
    "flatten-5d-all": Case(nn.Flatten, lambda: image(4, 2, 1, 3, 7)),
    "flatten-5d-2-3": Case(lambda: nn.Flatten(2, 3), lambda: image(4, 2, 1, 3, 7)),
    "flatten-5d-2-4": Case(lambda: nn.Flatten(2, 4), lambda: image(4, 2, 1, 3, 7)),
    "flatten-5d-0-m2": Case(lambda: nn.Flatten(0, -2), lambda: image(4, 2, 1, 3, 7)),
    "flatten-5d-0-4": Case(lambda: nn.Flatten(0, 4), lambda: image(4, 2, 1, 3, 7)),
    "slice": Case(lambda: Fn(lambda t: t[1:, 1:5:2, :]), lambda: image(4, 6, 2)),
    "slice-tail": Case(lambda: Fn(lambda t: t[3:]), lambda: image(5)),
    "slice-flexible": Case(lambda: Fn(lambda t: t[1:, 1:5:2, :]), lambda: image(4, 6, 2),
                           {0: [2]}),
    "cat-0": Case(lambda: Fn(lambda a, b: torch.cat([a, b], 0)),
                  lambda: (image(1, 2, 3, 3), image(2, 2, 3, 3))),
    "cat-1": Case(lambda: Fn(lambda a, b: torch.cat([a, b], 1)),
                  lambda: (image(1, 2, 3, 3), image(1, 4, 3, 3))),
    "cat-1-nhwc": Case(lambda: Fn(lambda a, b: torch.cat([a, b], 1)),
                       lambda: (nhwc(image(1, 2, 3, 3)), nhwc(image(1, 4, 3, 3)))),
    "relu": Case(nn.ReLU, lambda: torch.tensor([-1.0, 1.0])),
    "sigmoid": Case(nn.Sigmoid, lambda: torch.tensor([-1.0, 1.0])),
    **{f"{name}{suffix}": Case(lambda op=op: _binary(op), inputs)
       for name, op in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                        ("div", torch.div))
       for suffix, inputs in (
           ("", lambda: (torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))),
           ("-broadcast", lambda: (torch.tensor([[1.0, 2.0]]),
                                   torch.tensor([[3.0, 4.0], [5.0, 6.0]]))))},
    "add-constant": Case(lambda: Fn(lambda x: x + torch.ones(1, 1, 1, 1)),
                         lambda: image(2, 4, 6, 6)),
    "constant-add-nhwc": Case(lambda: Fn(lambda x: torch.ones(1, 1, 1, 1) + x),
                              lambda: nhwc(image(2, 4, 6, 6))),
    "hardtanh": Case(nn.Hardtanh, lambda: torch.tensor([-2.0, -0.5, 0.5, 2.0, 7.0])),
    "hardtanh-0-6": Case(lambda: nn.Hardtanh(0.0, 6.0),
                         lambda: torch.tensor([-2.0, -0.5, 0.5, 2.0, 7.0])),
    "softmax": Case(lambda: nn.Softmax(dim=1), lambda: torch.tensor([[-2.0, -0.5], [0.5, 2.0]])),
    "softmax-0": Case(lambda: nn.Softmax(dim=0), lambda: torch.tensor([[-2.0, -0.5], [0.5, 2.0]])),
    "softmax-flexible": Case(lambda: nn.Softmax(dim=1),
                             lambda: torch.tensor([[-2.0, -0.5], [0.5, 2.0]]), {0: [0, 1]}),
    "to-cpu": Case(lambda: nn.Sequential(Fn(lambda x: x.to("cpu")), nn.PReLU()),
                   lambda: image(1, 2, 3, 3)),
    "to-cpu-flexible": Case(lambda: nn.Sequential(Fn(lambda x: x.to("cpu")), nn.PReLU()),
                            lambda: image(1, 2, 3, 3), {0: [2, 3]}),
    "detach": Case(lambda: Fn(lambda x: F.relu(x.detach())), lambda: image(1, 2, 3, 3)),
    "detach-flexible": Case(lambda: Fn(lambda x: F.relu(x.detach())), lambda: image(1, 2, 3, 3),
                            {0: [2, 3]}),
    "log-softmax": Case(lambda: nn.LogSoftmax(1), lambda: image(3, 10)),
    "log-softmax-0": Case(lambda: nn.LogSoftmax(0), lambda: image(3, 10)),
    "mean-0": Case(lambda: Fn(lambda t: t.mean(0)), lambda: image(2, 3)),
    "mean-1": Case(lambda: Fn(lambda t: t.mean(1)), lambda: image(2, 3)),
    "mean-hw": Case(lambda: Fn(lambda t: t.mean([2, 3])), lambda: image(2, 3, 6, 6)),
    "mean-hw-nhwc": Case(lambda: Fn(lambda t: t.mean([2, 3])), lambda: nhwc(image(2, 3, 6, 6))),
    "mean-keep-nhwc": Case(lambda: Fn(lambda t: t.mean([-1, -2], keepdim=True)),
                           lambda: nhwc(image(2, 3, 6, 6))),
    "linear": Case(lambda: nn.Linear(16, 32), lambda: image(2, 16)),
    "linear-flexible": Case(lambda: nn.Linear(16, 32), lambda: image(2, 16), {0: [0]}),
    "seblock-mul": Case(lambda: _binary(torch.mul),
                        lambda: (nhwc(image(2, 3, 4, 4)), image(1, 3, 1, 1))),
    "multi-output": Case(lambda: Fn(lambda a, b: (a + b, a - b)),
                         lambda: (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0]))),
}
for _d in (-2, -1, 0, 1, 2):
    CASES[f"unsqueeze{_d}"] = Case(lambda d=_d: Fn(lambda t: t.unsqueeze(d)),
                                   lambda: image(4, 2, 2))
CASES["reshape"] = Case(lambda: Fn(lambda t: t.reshape(2, 4)), lambda: image(4, 2, 1, 1))
CASES["reshape-nhwc"] = Case(lambda: Fn(lambda t: t.reshape(8, -1)),
                             lambda: nhwc(image(4, 2, 1, 1)))
for _layout, _make in _layouts("image", lambda: image(2, 3, 12, 16)).items():
    for _name, _module in (("max-pool-2", lambda: nn.MaxPool2d(2)),
                           ("max-pool-3x4", lambda: nn.MaxPool2d((3, 4))),
                           ("max-pool-3x4-s1x2", lambda: nn.MaxPool2d((3, 4), (1, 2))),
                           ("avg-pool-2", lambda: nn.AvgPool2d(2)),
                           ("avg-pool-3x4", lambda: nn.AvgPool2d((3, 4))),
                           ("avg-pool-3x4-s1x2", lambda: nn.AvgPool2d((3, 4), (1, 2))),
                           ("adaptive-avg-1x1", lambda: nn.AdaptiveAvgPool2d((1, 1))),
                           ("nearest-16x20", lambda: nn.UpsamplingNearest2d(size=(16, 20))),
                           ("nearest-24x32", lambda: nn.UpsamplingNearest2d(size=(24, 32))),
                           ("nearest-36x48", lambda: nn.UpsamplingNearest2d(size=(36, 48))),
                           ("nearest-x1.5", lambda: nn.UpsamplingNearest2d(scale_factor=1.5)),
                           ("nearest-x2", lambda: nn.UpsamplingNearest2d(scale_factor=2.0)),
                           ("nearest-x3", lambda: nn.UpsamplingNearest2d(scale_factor=3.0))):
        CASES[f"{_name}-{_layout}"] = Case(_module, _make)
    for _name, _module in (("avg-pool-2", lambda: nn.AvgPool2d(2)),
                           ("avg-pool-3x4", lambda: nn.AvgPool2d((3, 4))),
                           ("nearest-24x32", lambda: nn.UpsamplingNearest2d(size=(24, 32))),
                           ("nearest-x2", lambda: nn.UpsamplingNearest2d(scale_factor=2.0))):
        CASES[f"{_name}-{_layout}-flexible"] = Case(_module, _make, {0: [2, 3]})

_CONVOLUTIONS = {  # in, out, kernel, stride, padding, groups, bias, input
    "3x3": (4, 8, 3, 1, 0, 1, True, (2, 4, 16, 16)),
    "3x3-nobias": (4, 8, 3, 1, 0, 1, False, (2, 4, 16, 16)),
    "3x3-p1": (4, 16, 3, 1, 1, 1, True, (2, 4, 16, 16)),
    "3x3-s2": (8, 8, 3, 2, 0, 1, True, (2, 8, 16, 16)),
    "5x5": (4, 8, 5, 1, 0, 1, True, (2, 4, 16, 16)),
    "3x3-depthwise": (4, 4, 3, 1, 0, 4, True, (2, 4, 16, 16)),
    "1x1": (8, 4, 1, 1, 0, 1, True, (2, 8, 16, 16)),
}
for _name, (_cin, _cout, _k, _s, _p, _g, _b, _shape) in _CONVOLUTIONS.items():
    def _conv(cin=_cin, cout=_cout, k=_k, s=_s, p=_p, g=_g, b=_b):
        torch.manual_seed(29)
        return nn.Conv2d(cin, cout, k, s, p, groups=g, bias=b)

    def _qconv(conv=_conv, shape=_shape):
        return quantized_module(conv(), image(*shape))

    for _flexible in (None, {0: [0, 2, 3]}):
        suffix = "-flexible" if _flexible else ""
        CASES[f"conv-{_name}-float{suffix}"] = Case(_conv, lambda s=_shape: image(*s), _flexible)
        CASES[f"conv-{_name}-float-nhwc{suffix}"] = Case(
            _conv, lambda s=_shape: nhwc(image(*s)), _flexible)
        CASES[f"conv-{_name}-quant{suffix}"] = Case(
            _qconv, lambda s=_shape: q(image(*s), 1 / 16, 128), _flexible)
        CASES[f"conv-{_name}-quant-nhwc{suffix}"] = Case(
            _qconv, lambda s=_shape: nhwc(q(image(*s), 1 / 16, 128)), _flexible)
for _layout in ("float", "float-nhwc"):
    for _flexible in (None, {0: [2, 3]}):
        def _transposed():
            torch.manual_seed(29)
            return nn.ConvTranspose2d(5, 7, 2)

        CASES[f"conv-transpose-{_layout}{'-flexible' if _flexible else ''}"] = Case(
            _transposed, (lambda: nhwc(image(4, 5, 3, 3))) if _layout.endswith("nhwc")
            else (lambda: image(4, 5, 3, 3)), _flexible)


def _qfunctional(op: str):
    functional = torch.ao.nn.quantized.QFunctional()
    functional.scale, functional.zero_point = 0.5, 120
    return Fn(lambda a, b: getattr(functional, op)(a, b))


for _op in ("add", "add_relu"):
    CASES[f"q{_op}-1d"] = Case(lambda op=_op: _qfunctional(op),
                               lambda: (q([1.0, 2.0], 0.25, 128), q([3.0, 4.0], 0.25, 128)))
    CASES[f"q{_op}-2d"] = Case(lambda op=_op: _qfunctional(op),
                               lambda: (q([[1.0, 2.0]], 0.25, 128), q([[3.0, 4.0]], 0.25, 128)))


def _qlinear():
    torch.manual_seed(29)
    weight = torch.quantize_per_tensor(torch.randn(16, 32), 0.125, 0, torch.qint8)
    linear = torch.ao.nn.quantized.Linear(32, 16)
    linear.set_weight_bias(weight, torch.randn(16))
    return linear


CASES["qlinear"] = Case(_qlinear, lambda: q(image(2, 32), 0.05, 130))


def _prototype_arguments(inputs: tuple, flexible: dict | None) -> list:
    """The prototype's conversion arguments: flexible dimensions as 0."""
    args = []
    for i, x in enumerate(inputs):
        dims = (flexible or {}).get(i, [])
        shape = [0 if d in dims else n for d, n in enumerate(x.shape)]
        arg = torch.zeros(shape) if not x.is_quantized else \
            torch.quantize_per_tensor(torch.zeros(shape), x.q_scale(), x.q_zero_point(),
                                      torch.quint8)
        if getattr(x, "nnapi_nhwc", False):
            arg = nhwc(arg)
        args.append(arg)
    return args


@pytest.mark.parametrize("name", sorted(CASES))
def test_models_of_pytorch_nnapi_test(name):
    case = CASES[name]
    model = case.model().eval()
    inputs = case.inputs()
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    with torch.no_grad(), warnings.catch_warnings():
        # the quantization modules turn their scale into a Python float while traced
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, inputs)
        convert_model_to_nnapi(traced, _prototype_arguments(inputs, case.flexible))
        expected = model(*inputs)
    conversion = convert(model, inputs, flexible=case.flexible)
    actual = run(conversion.module, inputs)
    assert len(as_list(actual)) == len(as_list(expected))
    assert_close(actual, expected)
