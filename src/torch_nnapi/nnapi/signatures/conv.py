"""Convolutions and fully connected layers: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D,
TRANSPOSE_CONV_2D, FULLY_CONNECTED.

Each convolution has an explicit-padding form (four padding amounts) and an implicit one (a
PaddingCode); the two are told apart by operand count and by the type of the input where the
forms differ. Type variables: T input and output, F filter, B bias.
"""

import numpy as np

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import LevelRule, RuleContext, combo, form, level_rule
from ._registry import define
from ._rules import bias_scale, per_channel_dim

_EXPLICIT = "pad_left:i32 pad_right:i32 pad_top:i32 pad_bottom:i32"
_STRIDES = "stride_w:i32 stride_h:i32"
_LAYOUT_DILATION = "[@3 nchw:bool=false [dilation_w:i32=1 dilation_h:i32=1]]"

# Float32 and asymmetric 8-bit since the first release; float16 and per-channel filters
# (TENSOR_QUANT8_SYMM_PER_CHANNEL, bias scales input.scale * filter.scales[c]) since API 29;
# signed 8-bit data since API 30.
_CONV_TYPES = [
    combo(1, T="tensor_f32", F="tensor_f32", B="tensor_f32"),
    combo(1, T="tensor_q8", F="tensor_q8", B="tensor_i32"),
    combo(3, T="tensor_f16", F="tensor_f16", B="tensor_f16"),
    combo(3, T="tensor_q8", F="tensor_q8pc", B="tensor_i32"),
    combo(4, T="tensor_q8_signed", F="tensor_q8_signed", B="tensor_i32"),
    combo(4, T="tensor_q8_signed", F="tensor_q8pc", B="tensor_i32"),
]
_OUT = "output:T"


def _output_scale_above_product(filter: str = "filter") -> LevelRule:
    """Before API 29 a quant8 output's scale had to exceed input.scale * filter.scale."""

    @level_rule(f"quant8 output.scale <= input.scale * {filter}.scale needs feature level 3")
    def needs(ctx: RuleContext) -> int | None:
        x, w, out = ctx.input("input"), ctx.input(filter), ctx.output("output")
        if x.type != OperandType.TENSOR_QUANT8_ASYMM or w.type != x.type:
            return None
        product = np.float32(x.scale) * np.float32(w.scale)  # a float product, as Android's
        return None if np.float32(out.scale) > product else 3

    return needs

define(
    Op.CONV_2D,
    summary="2-D convolution of an NHWC (or NCHW) batch with [out, h, w, in] filters",
    forms=[
        form("explicit", f"input:T filter:F bias:B {_EXPLICIT} {_STRIDES} fuse_code:i32"
                         f" {_LAYOUT_DILATION}", _OUT),
        form("implicit", f"input:T filter:F bias:B padding:i32 {_STRIDES} fuse_code:i32"
                         f" {_LAYOUT_DILATION}", _OUT),
    ],
    types=_CONV_TYPES,
    rules=[bias_scale(), per_channel_dim("filter", 0), _output_scale_above_product()],
)

define(
    Op.DEPTHWISE_CONV_2D,
    summary="per-channel 2-D convolution with [1, h, w, in * depth_multiplier] filters",
    forms=[
        form("explicit", f"input:T filter:F bias:B {_EXPLICIT} {_STRIDES}"
                         f" depth_multiplier:i32 fuse_code:i32 {_LAYOUT_DILATION}", _OUT),
        form("implicit", f"input:T filter:F bias:B padding:i32 {_STRIDES} depth_multiplier:i32"
                         f" fuse_code:i32 {_LAYOUT_DILATION}", _OUT),
    ],
    types=_CONV_TYPES,
    rules=[bias_scale(), per_channel_dim("filter", 3), _output_scale_above_product()],
)

define(
    Op.GROUPED_CONV_2D,
    summary="2-D convolution whose channels are split into independent groups",
    forms=[
        form("explicit", f"input:T filter:F bias:B {_EXPLICIT} {_STRIDES} num_groups:i32"
                         " fuse_code:i32 nchw:bool", _OUT),
        form("implicit", f"input:T filter:F bias:B padding:i32 {_STRIDES} num_groups:i32"
                         " fuse_code:i32 nchw:bool", _OUT),
    ],
    types=_CONV_TYPES,
    rules=[bias_scale(), per_channel_dim("filter", 0)],
)

define(
    Op.TRANSPOSE_CONV_2D,
    summary="transposed 2-D convolution (the gradient of CONV_2D), [out, h, w, in] filters",
    forms=[
        form("explicit", f"input:T filter:F bias:B {_EXPLICIT} {_STRIDES} fuse_code:i32"
                         " nchw:bool", _OUT),
        form("implicit", f"input:T filter:F bias:B output_shape:tensor_i32 padding:i32"
                         f" {_STRIDES} fuse_code:i32 nchw:bool", _OUT),
    ],
    types=_CONV_TYPES,
    rules=[bias_scale(), per_channel_dim("filter", 0)],
)

define(
    Op.FULLY_CONNECTED,
    summary="input (flattened to [batch, input_size]) times weights' plus bias",
    forms=[form("", "input:T weights:T bias:B fuse_code:i32", "output:T")],
    types=[
        combo(1, T="tensor_f32", B="tensor_f32"),
        combo(1, T="tensor_q8", B="tensor_i32"),
        combo(3, T="tensor_f16", B="tensor_f16"),
        combo(4, T="tensor_q8_signed", B="tensor_i32"),
    ],
    rules=[bias_scale(filter="weights"), _output_scale_above_product("weights")],
)
