"""fallback_stitch: the partitioned module is the captured graph, edited."""

from __future__ import annotations

import json

import torch

from torch_nnapi.convert.fallback.report import PartitionReport, report_of

from .. import fallback_models as fm
from .test_convert import image, partitioned


def test_forward_calls_the_regions_in_order_between_the_cpu_nodes():
    conversion = partitioned(fm.randomize(fm.Residual(blocks=2)), image())
    code = conversion.module.code
    calls = [code.index(f"self.region_{k}") for k in range(3)]
    cpu = [i for i in range(len(code)) if code.startswith("torch_nnapi_tests.wiggle", i)]
    assert calls[0] < cpu[0] < calls[1] < cpu[1] < calls[2]
    assert "_convolution" not in code  # the regions' nodes are gone from the graph


def test_control_flow_on_the_cpu_is_kept_as_compiled():
    class Branch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            y = self.a(x)
            if bool(y.mean() > 0):
                y = y * 2.0
            else:
                y = y - 1.0
            return self.b(y)

    for x in (image(0), -image(0)):
        conversion = partitioned(torch.jit.script(fm.randomize(Branch())), x)
        assert "if " in conversion.module.code
        assert "prim::If" in [c.kind for c in conversion.report.cpu]


def test_the_module_carries_its_report():
    conversion = partitioned(fm.randomize(fm.InTheMiddle()), image())
    data = json.loads(conversion.module.partition)
    assert data["version"] == 1 and len(data["regions"]) == 2
    assert report_of(conversion.module) == conversion.report
    assert data["schedule"] == ["region 0", "cpu 0", "region 1"]


class LevelOffsets(torch.nn.Module):
    """torchvision's RPN numbering the anchors it keeps per level: ``offset += count`` on a
    tensor computed from sizes, a constant at conversion time, changed in place on the CPU."""

    def forward(self, x):
        kept, offset = [], 0
        for level in x.split([2, 3, 2], 1):
            count = torch.ones((), dtype=torch.long) * level.shape[1]
            kept.append(fm.order(level) + offset)
            offset += count
        return torch.cat(kept)


def test_a_constant_changed_in_place_starts_afresh_at_each_run():
    conversion = partitioned(LevelOffsets(), image(shape=(1, 7, 4, 4)))
    assert "torch.clone(CONSTANTS" in conversion.module.code
    assert "add_" in conversion.module.code


# The partition attribute of a module converted before RegionReport took keywords only.
_SAVED_REPORT = """{"regions": [{"index": 0, "nodes": 2, "operations": {"CONV_2D": 1},
 "size": 1, "feature_level": 1, "inputs": [{"name": "x", "shape": [1, 3, 8, 8],
 "dtype": "float32", "bytes": 768, "peer": "model input 0", "flexible": [2]}],
 "outputs": [{"name": "12", "shape": [1, 8, 8, 8], "dtype": "float32", "bytes": 2048,
 "peer": "the CPU", "flexible": []}], "first": "m.py:3 (forward), module a",
 "last": "m.py:3 (forward)"}], "cpu": [{"kind": "torch_nnapi_tests::wiggle",
 "location": "m.py:4 (forward)", "reason": "no lowering for this op"}],
 "schedule": ["region 0", "cpu 0"], "recomputed": 0, "policy": {"fallback_ops": [],
 "min_region_size": 1, "max_regions": null, "target_level": null},
 "inputs": [{"shape": [1, 3, -1, 8], "dtype": "float32"}], "version": 1}"""


def test_a_report_saved_before_loads_and_saves_the_same():
    saved = json.loads(_SAVED_REPORT)
    report = PartitionReport.from_json(saved)
    assert report.regions[0].inputs[0].flexible == [2]
    assert report.cpu[0].location == "m.py:4 (forward)"
    assert report.to_json() == saved
    assert "region 0: 2 PyTorch nodes, feature level 1: CONV_2D 1" in "\n".join(report.render())
