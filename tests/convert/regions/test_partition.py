"""regions/partition.py: how regions form, what crosses between them, the policy's knobs."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.capture.script import capture_script
from torch_nnapi.convert.options import FallbackPolicy
from torch_nnapi.convert.regions.partition import Region, partition

from .. import fallback_models as fm
from ..fallback.test_convert import image, partitioned


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
    ({"fallback_ops": frozenset(["softmax"])}, "TorchScript op kinds such as 'aten::softmax'"),
    ({"min_region_size": -1}, "min_region_size must be >= 0"),
    ({"max_regions": 0}, "max_regions must be >= 1"),
])
def test_policy_checks_its_knobs(policy, message):
    with pytest.raises(ValueError, match=message):
        FallbackPolicy(**policy)


def test_relaxed_float16_above_the_target_is_not_fixed_by_the_cpu():
    with pytest.raises(Exception, match="relaxed float32 -> float16 computation needs level 2"):
        convert_with_details(fm.randomize(fm.InTheMiddle()), image(), fallback=True,
                             target_level=1, relax_fp32_to_fp16=True, nhwc=True)
