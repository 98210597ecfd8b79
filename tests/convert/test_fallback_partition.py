"""fallback_partition: which nodes run on NNAPI, how regions form, what crosses."""

from __future__ import annotations

import math

import pytest
import torch

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.capture import capture_script
from torch_nnapi.convert.fallback_partition import FallbackPolicy, Region, partition

from . import fallback_models as fm
from .harness import check
from .test_fallback import image, partitioned


@torch.library.custom_op("torch_nnapi_tests::positives", mutates_args=())
def positives(x: torch.Tensor) -> torch.Tensor:
    """The positive elements: a size that depends on the data, from an op nobody lists."""
    return x[x > 0]


@positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


def partition_of(model, x, **policy):
    captured = capture_script(model.eval(), (x,)).without_mutation()
    return partition(captured, (x,), policy=FallbackPolicy(**policy), nhwc=[None],
                     flexible=[()])


def test_regions_by_cpu_depth_and_running_order():
    part = partition_of(fm.randomize(fm.ParallelBranches()), image())
    assert [r.level for r in part.regions] == [0, 1]
    kinds = [item.kind if not isinstance(item, Region) else f"region {item.level}"
             for item in part.schedule]
    assert kinds == ["region 0", "torch_nnapi_tests::wiggle", "region 1"]
    first, second = part.regions
    assert [v.name for v in first.inputs] == ["x"]
    assert len(first.outputs) == 2  # to the CPU op and to the second region
    (from_cpu,) = part.cpu[0].node.outputs
    assert len(second.inputs) == 2 and set(second.inputs) <= set(first.outputs) | {from_cpu}


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


def test_sizes_known_at_conversion_become_constants_on_the_cpu():
    class Sizes(torch.nn.Module):
        def forward(self, x):
            y = x * 2.0
            h = y.size(2)
            return torch.ops.torch_nnapi_tests.wiggle(y).reshape(1, -1, h)

    conversion = partitioned(Sizes(), image())
    code = conversion.module.code
    assert "size(" not in code and "12" in code  # the size, folded into a constant


class Split(torch.nn.Module):
    def forward(self, x):
        parts = torch.split(x * 2.0, 1, 1)
        return torch.cat(parts, 1) + 1.0


def test_lists_are_rebuilt_on_the_cpu_from_their_tensors():
    conversion = partitioned(Split(), image(), fallback_ops=["aten::cat"])
    assert len(conversion.report.regions[0].outputs) == 3  # the three parts, as tensors
    assert "torch.cat([_0, _1, _2], 1)" in conversion.module.code


def test_lists_do_not_cross_regions():
    """Scripted, the list split returns goes straight to cat: split moves to the CPU."""
    conversion = partitioned(torch.jit.script(Split()), image(), fallback_ops=["aten::cat"])
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert reasons["aten::split"].endswith("is not a tensor, yet is read outside its region")


@pytest.mark.parametrize("policy, message", [
    ({"fallback_ops": ["softmax"]}, "TorchScript op kinds such as 'aten::softmax'"),
    ({"min_region_size": -1}, "min_region_size must be >= 0"),
    ({"max_regions": 0}, "max_regions must be >= 1"),
])
def test_policy_checks_its_knobs(policy, message):
    with pytest.raises(ValueError, match=message):
        FallbackPolicy(**{k: frozenset(v) if k == "fallback_ops" else v
                          for k, v in policy.items()})


def test_relaxed_float16_above_the_target_is_not_fixed_by_the_cpu():
    with pytest.raises(Exception, match="relaxed float32 -> float16 computation needs level 2"):
        convert_with_details(fm.randomize(fm.InTheMiddle()), image(), fallback=True,
                             target_level=1, relax_fp32_to_fp16=True, nhwc=True)


def test_converter_errors_move_the_node_to_the_cpu(monkeypatch):
    """A lowering that disagrees with PyTorch (a converter bug) costs its node NNAPI, not
    the conversion."""
    from torch_nnapi.convert.lowerings import LOWERINGS, Lowering

    original = LOWERINGS["aten::sigmoid"]

    def wrong(cx, x):  # a flat result where PyTorch's is 4-D
        y = original.fn(cx, x)
        return cx.reshape(y, (1, math.prod(y.shape)))

    monkeypatch.setitem(LOWERINGS, "aten::sigmoid",
                        Lowering("aten::sigmoid", wrong, original.family, original.nnapi, ""))
    conversion, _ = check(fm.randomize(fm.InTheMiddle()), image(), fallback=True)
    reasons = {c.kind: c.reason for c in conversion.report.cpu}
    assert reasons["aten::sigmoid"].startswith("the converter failed: aten::sigmoid at")
