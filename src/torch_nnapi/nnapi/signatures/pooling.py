"""Pooling and resizing: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D, RESIZE_BILINEAR,
RESIZE_NEAREST_NEIGHBOR.

The pools share CONV_2D's explicit/implicit padding forms. The resize operations take the
output size either as two INT32 sizes or (since API 29) as two scales of the input's float
type; one type variable S covers both so the scale form is only available where Android 10
introduced it.
"""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define
from ._rules import same_quant

_POOL_FORMS = [
    form("explicit", "input:T pad_left:i32 pad_right:i32 pad_top:i32 pad_bottom:i32"
                     " stride_w:i32 stride_h:i32 filter_w:i32 filter_h:i32 fuse_code:i32"
                     " [@3 nchw:bool=false]", "output:T"),
    form("implicit", "input:T padding:i32 stride_w:i32 stride_h:i32 filter_w:i32 filter_h:i32"
                     " fuse_code:i32 [@3 nchw:bool=false]", "output:T"),
]

define(Op.AVERAGE_POOL_2D, forms=_POOL_FORMS, rules=[same_quant()],
       summary="mean of each window, padding excluded",
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16"),
              combo(4, T="tensor_q8_signed")])
define(Op.MAX_POOL_2D, forms=_POOL_FORMS, rules=[same_quant()],
       summary="maximum of each window",
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16"),
              combo(4, T="tensor_q8_signed")])
define(Op.L2_POOL_2D, forms=_POOL_FORMS,
       summary="square root of the mean of squares of each window, padding excluded",
       types=[combo(1, T="tensor_f32"), combo(3, T="tensor_f16")])

# S = i32: width and height are output sizes; S = f32/f16: they scale the input's size.
_RESIZE_TYPES = [
    combo(1, T="tensor_f32", S="i32"),
    combo(3, T="tensor_f32", S="f32"),
    combo(3, T="tensor_f16", S="i32"),
    combo(3, T="tensor_f16", S="f16"),
    combo(3, T="tensor_q8", S="i32"),
    combo(3, T="tensor_q8", S="f32"),
    combo(4, T="tensor_q8_signed", S="i32"),
    combo(4, T="tensor_q8_signed", S="f32"),
]
_CORNERS = "[@4 align_corners:bool=false half_pixel_centers:bool=false]"

define(
    Op.RESIZE_BILINEAR,
    summary="bilinear resize to a given size or by given scales",
    forms=[form("", f"input:T width:S height:S [@3 nchw:bool=false {_CORNERS}]", "output:T")],
    types=_RESIZE_TYPES,
    rules=[same_quant()],
)
define(
    Op.RESIZE_NEAREST_NEIGHBOR,
    summary="nearest-neighbor resize to a given size or by given scales",
    forms=[form("", f"input:T width:S height:S nchw:bool {_CORNERS}", "output:T")],
    types=_RESIZE_TYPES,
    rules=[same_quant()],
)
