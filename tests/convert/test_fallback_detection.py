"""A torchvision detection model: backbone and heads on NNAPI, post-processing (box
decoding filters, top-k, NMS) on the CPU, matching eager on images it was not converted
with."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.api import convert_with_details

from .fallback_detection import detection_error, detector, image

pytestmark = [
    pytest.mark.slow,
    # torchvision's box code itself (torch.tensor of a traced size), in eager PyTorch too
    pytest.mark.filterwarnings("ignore:To copy construct from a tensor:UserWarning"),
]


@pytest.mark.parametrize("name", ["ssdlite320_mobilenet_v3_large"])
def test_detection_runs_backbone_and_heads_on_nnapi(name):
    model = detector(name)
    x = image(0)
    conversion = convert_with_details(model, x, fallback=True)
    convolutions = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    on_nnapi = sum(r.operation_counts.get(op, 0) for r in conversion.regions
                   for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D"))
    assert on_nnapi == convolutions
    kinds = {c.kind for c in conversion.report.cpu}
    assert "aten::index" in kinds  # the score filter, whose size depends on the data
    for seed in (0, 1, 2):
        x = image(seed)
        with torch.no_grad():
            expected = model(x)
            actual = conversion.module(x)
        assert len(expected[1]) > 10 and expected[1].unique().numel() > 10
        assert detection_error(actual, expected) <= 1e-5
