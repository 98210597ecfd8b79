"""torchvision for the real-model tests, on the CPU-only torch of this project.

The torchvision wheel that installs beside torch 2.13.0 carries a CUDA build of its C++
extension, which cannot load with the CPU torch: ``import torchvision`` then fails while
registering the fake kernel of ``torchvision::nms``. The model definitions themselves are pure
Python, so defining the two operators they call (``torchvision::nms`` and
``torchvision::roi_align``) as Python custom ops before the import makes every model work, and
the detection models keep those operators as single nodes in traced and exported graphs.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from types import ModuleType

import pytest
import torch


def _define_operators() -> None:
    """torchvision::nms and torchvision::roi_align with the semantics of its CPU kernels."""

    @torch.library.custom_op("torchvision::nms", mutates_args=())
    def nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        # Greedy: the best remaining box suppresses every later box overlapping it by more
        # than the threshold; the order is the scores' stable descending sort, as in
        # torchvision's kernel. One row of overlaps at a time: detection models run NMS on
        # tens of thousands of boxes, whose full IoU matrix would take gigabytes.
        order = torch.sort(scores, descending=True, stable=True).indices
        boxes = dets[order]
        area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        suppressed = torch.zeros(len(order), dtype=torch.bool)
        keep = []
        for i in range(len(order)):
            if suppressed[i]:
                continue
            keep.append(i)
            rest = boxes[i + 1:]
            top_left = torch.maximum(boxes[i, :2], rest[:, :2])
            bottom_right = torch.minimum(boxes[i, 2:], rest[:, 2:])
            overlap = (bottom_right - top_left).clamp(min=0).prod(dim=1)
            suppressed[i + 1:] |= overlap / (area[i] + area[i + 1:] - overlap) > iou_threshold
        return order[torch.tensor(keep, dtype=torch.long)]

    @torch.library.custom_op("torchvision::qnms", mutates_args=())
    def qnms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        return nms(dets.dequantize(), scores.dequantize(), iou_threshold)

    @torch.library.custom_op("torchvision::roi_align", mutates_args=())
    def roi_align(input: torch.Tensor, rois: torch.Tensor, spatial_scale: float,
                  pooled_height: int, pooled_width: int, sampling_ratio: int,
                  aligned: bool) -> torch.Tensor:
        # torchvision's own PyTorch version, without the torch.compile its module wraps it in
        # (compiling takes a minute on the test machine)
        from torchvision.ops.roi_align import _roi_align

        return _roi_align.__wrapped__(input, rois, spatial_scale, pooled_height, pooled_width,
                                      sampling_ratio, aligned)

    @roi_align.register_fake
    def _(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
        return input.new_empty((rois.shape[0], input.shape[1], pooled_height, pooled_width))


@functools.cache
def load_torchvision() -> ModuleType:
    """``torchvision``, importable and with its operators defined; skips when not installed."""
    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed (pip install '.[torch,test]' installs it)")
    if not hasattr(torch.ops.torchvision, "nms"):
        _define_operators()
    import torchvision
    import torchvision.extension
    import torchvision.ops.roi_align

    # torchvision asks whether its extension loaded before calling its operators; they exist.
    # (torchvision.ops.roi_align is the function: the module is found in sys.modules.)
    torchvision.extension._has_ops = _operators_defined
    roi_align_module = sys.modules["torchvision.ops.roi_align"]
    roi_align_module._has_ops = _operators_defined  # type: ignore[attr-defined]  # untyped module
    return torchvision


def _operators_defined() -> bool:
    """Stands for torchvision's ``_has_ops``; a plain function, because tracing a detection
    model scripts the helpers that call it (``batched_nms``)."""
    return True
