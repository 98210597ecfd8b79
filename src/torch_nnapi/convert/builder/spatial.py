"""Building blocks of the 2-D operations (convolutions, pools, resizes, roi_align): the
feature map in a layout they take, a pool over the whole image, and the constant filter and
bias operands of a layer with weights (convolutions, fully connected), float or quantized.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from . import layout as lay
from .context import Converter
from .values import TensorValue


def spatial_input(cx: Converter, x: TensorValue) -> tuple[TensorValue, bool]:
    """``x`` in a layout NNAPI's 2-D ops accept, and whether it is NCHW (the layout flag)."""
    if x.rank != 4:
        raise Unsupported(f"expected a 4-D input, got shape {list(x.shape)}")
    if x.layout == lay.NHWC:
        return x, False
    if lay.is_identity(x.layout):
        return x, True
    return cx.to_layout(x, lay.NHWC), False


def global_pool(cx: Converter, op: Op, x: TensorValue) -> TensorValue | None:
    """AVERAGE_POOL_2D or MAX_POOL_2D over all of H and W (any sizes, flexible ones too) of
    a channels-last ``x``, the [N, C, 1, 1] result channels-last; None for other layouts,
    which would need the NCHW flag (level 3) where MEAN needs level 2."""
    if x.rank != 4 or x.layout != lay.NHWC:
        return None
    n, c, h, w = x.shape
    zero, one = cx.i32(0), cx.i32(1)
    return cx.emit(op, dict(input=x, pad_left=zero, pad_right=zero, pad_top=zero,
                            pad_bottom=zero, stride_w=one, stride_h=one, filter_w=cx.i32(w),
                            filter_h=cx.i32(h), fuse_code=cx.i32(int(FuseCode.NONE))),
                   (n, c, 1, 1), x.dtype, x.layout, x.scale, x.zero_point)


# ------------------------------------------------------------------------------ weights


@dataclass(frozen=True)
class ConvQuant:
    """Quantization of a quantized convolution: weights are 8-bit of the input's type
    (zero point ``filter_zero_point``), the bias int32 with scale input.scale *
    filter_scale; or, with ``filter_scales``, symmetric int8 weights with one scale per
    output channel (TENSOR_QUANT8_SYMM_PER_CHANNEL, feature level 3) and the bias of channel
    c with scale input.scale * filter_scales[c]."""

    filter_scale: float
    filter_zero_point: int
    out_scale: float
    out_zero_point: int
    filter_scales: tuple[float, ...] = ()  # per output channel; empty: per tensor

    def channels(self, start: int, stop: int) -> ConvQuant:
        """The quantization of output channels [start, stop) (a group's)."""
        if not self.filter_scales:
            return self
        return replace(self, filter_scales=self.filter_scales[start:stop])


def filter_operand(cx: Converter, array: np.ndarray, x: TensorValue, quant: ConvQuant | None,
                   channel_dim: int = 0) -> TensorValue:
    """A layer's constant weights ``array``: float, 8-bit of the input's type, or int8 with
    per-channel scales along ``channel_dim`` (the output channels' dimension of the NNAPI
    filter: 0, or 3 for DEPTHWISE_CONV_2D)."""
    if quant is None:
        return cx.constant(array, x.dtype)
    if quant.filter_scales:
        return cx.constant(array, "qint8_per_channel", channel_scales=quant.filter_scales,
                           channel_dim=channel_dim)
    return cx.constant(array, x.dtype, scale=quant.filter_scale,
                       zero_point=quant.filter_zero_point)


def bias_operand(cx: Converter, bias: np.ndarray, x: TensorValue, quant: ConvQuant | None
                 ) -> TensorValue:
    """A layer's constant float ``bias``, quantized to int32 for a quantized layer (per
    channel with per-channel weights, whose bias operand has scale 0 as NNAPI requires: the
    scales are implied)."""
    if quant is None:
        return cx.constant(bias, x.dtype)
    if quant.filter_scales:
        scales = x.scale * np.asarray(quant.filter_scales, np.float64)
        q = np.clip(np.round(bias.astype(np.float64) / scales), -2**31, 2**31 - 1)
        return cx.constant(q.astype(np.int32), "qint32")
    scale = x.scale * quant.filter_scale
    q = np.clip(np.round(bias.astype(np.float64) / scale), -2**31, 2**31 - 1).astype(np.int32)
    return cx.constant(q, "qint32", scale=scale)


def output_type(x: TensorValue, quant: ConvQuant | None) -> tuple[str, float, int]:
    """The (dtype, scale, zero point) of a layer's output."""
    if quant is None:
        return x.dtype, 0.0, 0
    return x.dtype, quant.out_scale, quant.out_zero_point
