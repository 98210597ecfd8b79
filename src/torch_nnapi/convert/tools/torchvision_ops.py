"""torchvision's operators when its compiled extension cannot load beside this torch.

The torchvision wheel that installs beside the CPU torch of this project carries a C++
extension built for another torch: it does not load, and ``import torchvision`` then fails
while registering the fake kernel of ``torchvision::nms`` (so does unpickling any torchvision
model, and loading a scripted or exported detector). The model definitions are pure Python:
defining the operators they call as Python custom ops before the import makes them load and
run, and detection models keep those operators as single nodes in traced and exported graphs.

``nms``, ``qnms`` and ``roi_align`` (what torchvision's detection models run) get real
implementations; torchvision's other compiled operators (``roi_pool``, ``ps_roi_align``,
``ps_roi_pool``, ``deform_conv2d``, ...) stay undefined and raise one line naming the operator
when a model runs them. Nothing is defined when torchvision's own extension loads.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import torch

# what ensure_torchvision_operators defines (the CLI names them in its errors)
DEFINED = ("nms", "qnms", "roi_align")


class TorchvisionUnavailable(RuntimeError):
    """torchvision is not installed, or its operators cannot be made to load."""


def _compiled_operators_load() -> bool:
    """Whether torchvision's own C++ extension loads beside this torch."""
    spec = importlib.util.find_spec("torchvision")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for directory in locations:
        for library in Path(directory).glob("_C.*"):
            try:
                torch.ops.load_library(str(library))  # type: ignore[no-untyped-call]
            except OSError:
                return False
            return True
    return False


def _nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy: the best remaining box suppresses every later box overlapping it by more than
    the threshold, in the scores' stable descending order (torchvision's kernel's order).
    One row of overlaps at a time: detectors run it on tens of thousands of boxes, whose
    full IoU matrix would take gigabytes."""
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


def _define_operators() -> None:
    """torchvision::nms, qnms and roi_align with the semantics of its CPU kernels."""

    @torch.library.custom_op("torchvision::nms", mutates_args=())
    def nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        return _nms(dets, scores, iou_threshold)

    @torch.library.custom_op("torchvision::qnms", mutates_args=())
    def qnms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        return _nms(dets.dequantize(), scores.dequantize(), iou_threshold)

    @torch.library.custom_op("torchvision::roi_align", mutates_args=())
    def roi_align(input: torch.Tensor, rois: torch.Tensor, spatial_scale: float,
                  pooled_height: int, pooled_width: int, sampling_ratio: int,
                  aligned: bool) -> torch.Tensor:
        # torchvision's own PyTorch version, without the torch.compile its module wraps it in
        # (compiling takes a minute on a small machine)
        from torchvision.ops.roi_align import _roi_align

        pooled: torch.Tensor = _roi_align.__wrapped__(
            input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
        return pooled

    @roi_align.register_fake
    def _(input: torch.Tensor, rois: torch.Tensor, spatial_scale: float, pooled_height: int,
          pooled_width: int, sampling_ratio: int, aligned: bool) -> torch.Tensor:
        return input.new_empty((rois.shape[0], input.shape[1], pooled_height, pooled_width))


def _operators_defined() -> bool:
    """Stands for torchvision's ``_has_ops``; a plain function, because tracing a detection
    model scripts the helpers that call it (``batched_nms``)."""
    return True


def _undefined_operator() -> None:
    """Stands for ``_assert_has_ops`` in the modules of the operators left undefined."""
    raise RuntimeError("this torchvision operator cannot run here: torchvision's compiled"
                       " operators do not load beside this torch, and only nms, qnms and"
                       " roi_align have Python definitions")


@functools.cache
def ensure_torchvision_operators() -> ModuleType:
    """``torchvision``, imported with its operators defined (see the module docstring);
    :class:`TorchvisionUnavailable` when it is not installed."""
    if importlib.util.find_spec("torchvision") is None:
        raise TorchvisionUnavailable("torchvision is not installed")
    if hasattr(torch.ops.torchvision, "nms") or _compiled_operators_load():
        return importlib.import_module("torchvision")
    _define_operators()
    torchvision = importlib.import_module("torchvision")
    # torchvision asks whether its extension loaded before calling its operators; the ones
    # defined above exist, the others say they cannot run. (Modules by name:
    # torchvision.ops.roi_align is also the function's name.)
    for name in ("extension", "ops.roi_align"):
        module = importlib.import_module(f"torchvision.{name}")
        module._has_ops = _operators_defined  # type: ignore[attr-defined]  # untyped package
    for name in ("roi_pool", "ps_roi_align", "ps_roi_pool", "deform_conv"):
        module = importlib.import_module(f"torchvision.ops.{name}")
        module._assert_has_ops = _undefined_operator  # type: ignore[attr-defined]  # untyped
    return torchvision
