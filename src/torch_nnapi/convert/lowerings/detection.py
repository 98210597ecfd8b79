"""torchvision's detection operators that NNAPI expresses with the same semantics.

``torchvision::roi_align`` with ``aligned=False`` is ROI_ALIGN: both put each roi on the
feature map at ``roi * spatial_scale``, widen it to at least one pixel, split it into the
output bins, average ``sampling_ratio`` (or ``ceil(bin size)`` when 0) bilinear samples per
bin axis, and clamp samples at the far edge. (Android fails the operation for a roi outside
the feature map, where torchvision samples zeros; proposals are clipped to the image, which
lies inside it.) ``aligned=True`` shifts rois by half a pixel and drops the one-pixel minimum,
which Android 10's ROI_ALIGN cannot do.

The detectors' post-processing has no NNAPI form with PyTorch's semantics, and is left to the
CPU fallback: torchvision's NMS keeps boxes whose overlap is not above the threshold where
BOX_WITH_NMS_LIMIT drops those at it or above, keeps per class the top-k candidates before NMS
and orders the result by score where BOX_WITH_NMS_LIMIT has no candidate limit and groups by
class; GENERATE_PROPOSALS is Detectron's single-level proposal step where torchvision's RPN
takes the top-k per pyramid level and suppresses within each level; DETECTION_POSTPROCESSING
is TFLite's SSD decoding (center-size boxes, a fixed number of padded detections).
"""

from __future__ import annotations

import torch

from ...nnapi.codes import OperationType as Op
from ..builder import layout as lay
from ..builder.common import constant_float, require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.slicing import strided_slice
from ..builder.spatial import spatial_input
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering


def _rois(cx: Converter, rois: Arg) -> tuple[TensorValue, TensorValue]:
    """torchvision's [K, 5] rois (batch index, x1, y1, x2, y2) as NNAPI's boxes [K, 4] and
    int32 batch indices [K]."""
    if isinstance(rois, torch.Tensor):
        rois = rois.detach().float()
        return (cx.torch_constant(rois[:, 1:].contiguous()),
                cx.torch_constant(rois[:, 0].to(torch.int32), "int32"))
    rois = require_tensor(rois, "rois")
    if rois.rank != 2 or rois.shape[1] != 5 or rois.dtype != "float32":
        raise Unsupported(f"rois of shape {list(rois.shape)} and dtype {rois.dtype} (float32"
                          " [K, 5] expected)")
    rois = cx.contiguous(rois)
    boxes = strided_slice(cx, rois, {1: (1, 5, 1)})
    index = strided_slice(cx, rois, {1: (0, 1, 1)}, shrink=(1,))
    return boxes, cx.emit(Op.CAST, dict(input=index), index.shape, "int32")


@lowering("torchvision::roi_align", nnapi=("ROI_ALIGN", "STRIDED_SLICE", "CAST"),
          notes="aligned=False (torchvision's detectors); rois inside the feature map")
def roi_align(cx: Converter, x: Arg, rois: Arg, spatial_scale: float, pooled_height: int,
              pooled_width: int, sampling_ratio: int, aligned: bool) -> TensorValue:
    x = require_tensor(x)
    if x.rank != 4 or x.dtype != "float32":
        raise Unsupported(f"roi_align of a {x.rank}-D {x.dtype} tensor (4-D float32 only)")
    if static_int(aligned, "aligned"):
        raise Unsupported("roi_align(aligned=True): Android 10's ROI_ALIGN has no half-pixel"
                          " offset")
    scale = constant_float(spatial_scale, "spatial_scale")
    height, width = static_int(pooled_height, "output height"), static_int(pooled_width,
                                                                            "output width")
    samples = max(static_int(sampling_ratio, "sampling_ratio"), 0)  # 0: adaptive
    x, nchw = spatial_input(cx, x)
    boxes, batch_index = _rois(cx, rois)
    shape = (boxes.shape[0], x.shape[1], height, width)
    return cx.emit(Op.ROI_ALIGN, dict(
        input=x, rois=boxes, batch_index=batch_index, out_height=cx.i32(height),
        out_width=cx.i32(width), height_ratio=cx.f32(1.0 / scale),
        width_ratio=cx.f32(1.0 / scale), height_samples=cx.i32(samples),
        width_samples=cx.i32(samples), nchw=cx.boolean(nchw)),
        shape, "float32", None if nchw else lay.NHWC)
