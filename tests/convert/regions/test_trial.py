"""regions/trial.py: which nodes NNAPI can run, and which values only the CPU holds."""

from __future__ import annotations

import math

import torch

from torch_nnapi.convert.builder.values import TensorValue

from .. import fallback_models as fm
from ..fallback.test_convert import image, partitioned
from ..harness import check


@torch.library.custom_op("torch_nnapi_tests::positives", mutates_args=())
def positives(x: torch.Tensor) -> torch.Tensor:
    """The positive elements: a size that depends on the data, from an op nobody lists."""
    return x[x > 0]


@positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


def test_in_place_changes_keep_their_readers_on_the_cpu():
    class InPlace(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            y = self.a(x)
            z = y * 2.0
            y[:, 0] = 0.0  # through a view: TorchScript cannot make it functional
            return self.b(y) + z

    conversion = partitioned(fm.randomize(InPlace()), image())
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert reasons["aten::fill_"] == "it changes a tensor in place"
    assert "aten::fill_ changes in place" in reasons["aten::mul"]  # read before the change
    assert "aten::fill_ changes in place" in reasons["aten::_convolution"]  # and after


def test_in_place_ops_torchscript_makes_functional_stay_on_nnapi():
    class Relu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            y = torch.ops.torch_nnapi_tests.wiggle(self.a(x).relu_())
            return self.b(y).add_(1.0)

    conversion = partitioned(fm.randomize(Relu()), image())
    assert [c.kind for c in conversion.report.cpu] == ["torch_nnapi_tests::wiggle"]


def test_sizes_that_change_with_the_data_stay_on_the_cpu():
    class Positives(torch.nn.Module):
        def forward(self, x):
            return torch.ops.torch_nnapi_tests.positives(x * 2.0) + 1.0

    conversion = partitioned(Positives(), image(), min_region_size=1)
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert reasons["torch_nnapi_tests::positives"] == ("its sizes changed when the model ran"
                                                      " on other data")
    assert "only the CPU holds" in reasons["aten::add"]


def test_sizes_from_a_number_computed_at_run_time_stay_on_the_cpu():
    """A number other data does not change gives no evidence: what it sizes stays."""
    class Sized(torch.nn.Module):
        def forward(self, x):
            n = int((x.abs().sum() >= 0).item()) + 1  # 2, for any data
            return (x * 2.0).reshape(n, -1) + 1.0

    conversion = partitioned(torch.jit.script(Sized()), torch.randn(4, 6))
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert "a number computed at run time" in reasons["aten::reshape"]
    assert "its sizes may depend on" in reasons["aten::add"]


def test_converter_errors_move_the_node_to_the_cpu(monkeypatch):
    """A lowering that disagrees with PyTorch (a converter bug) costs its node NNAPI, not
    the conversion."""
    from torch_nnapi.convert.lowerings import LOWERINGS, Lowering

    original = LOWERINGS["aten::sigmoid"]

    def wrong(cx, x):  # a flat result where PyTorch's is 4-D
        y = original.fn(cx, x)
        assert isinstance(y, TensorValue)
        return cx.reshape(y, (1, math.prod(y.shape)))

    monkeypatch.setitem(LOWERINGS, "aten::sigmoid",
                        Lowering("aten::sigmoid", wrong, original.family, original.nnapi, ""))
    conversion, _ = check(fm.randomize(fm.InTheMiddle()), image(), fallback=True)
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert reasons["aten::sigmoid"].startswith("the converter failed: aten::sigmoid at")
