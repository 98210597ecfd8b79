"""Data movement: padding, slicing, gathering and block rearrangements.

PAD, PAD_V2, SLICE, STRIDED_SLICE, GATHER, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, CHANNEL_SHUFFLE.
"""

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import RuleContext, combo, form, level_rule
from ._registry import define
from ._rules import same_quant
from ._shape_types import ALL4, SIGNED_Q8, float_q8, types_since_3

_Q8 = OperandType.TENSOR_QUANT8_ASYMM


@level_rule("quant8 input with a nonzero zero point needs feature level 3")
def _padding_with_logical_zero(ctx: RuleContext) -> int | None:
    """Before API 29 the pad value of quant8 tensors was undefined unless the zero point
    was 0; since then it is the logical zero."""
    x = ctx.input("input")
    return 3 if x is not None and x.type == _Q8 and x.zero_point != 0 else None


define(Op.PAD, summary="pads with zeros (the zero point for quant8)",
       forms=[form("", "input:T paddings:tensor_i32", "output:T")],
       types=float_q8(2), rules=[same_quant(), _padding_with_logical_zero])

define(Op.PAD_V2, summary="pads with a given value",
       forms=[form("", "input:T paddings:tensor_i32 pad_value:P", "output:T")],
       types=[combo(3, T="tensor_f16", P="f16"), combo(3, T="tensor_f32", P="f32"),
              combo(3, T="tensor_q8", P="i32"), combo(4, T="tensor_q8_signed", P="i32")],
       rules=[same_quant()])

define(Op.SLICE, summary="a block of given begin and size (-1: to the end)",
       forms=[form("", "input:T begin:tensor_i32 size:tensor_i32", "output:T")],
       types=ALL4, rules=[same_quant()])

define(Op.STRIDED_SLICE, summary="a strided slice with begin/end/shrink-axis masks",
       forms=[form("", "input:T begin:tensor_i32 end:tensor_i32 strides:tensor_i32"
                       " begin_mask:i32 end_mask:i32 shrink_axis_mask:i32", "output:T")],
       types=float_q8(2), rules=[same_quant()])

define(Op.GATHER, summary="selects slices along an axis by indices",
       forms=[form("", "input:T axis:i32 indices:tensor_i32", "output:T")],
       types=ALL4, rules=[same_quant()])

define(Op.BATCH_TO_SPACE_ND, summary="moves batch blocks into the spatial dimensions",
       forms=[form("", "input:T block_shape:tensor_i32 [@3 nchw:bool=false]", "output:T")],
       types=float_q8(2), rules=[same_quant()])

define(Op.SPACE_TO_BATCH_ND, summary="pads, then moves spatial blocks into the batch",
       forms=[form("", "input:T block_shape:tensor_i32 paddings:tensor_i32 [@3 nchw:bool=false]",
                   "output:T")],
       types=float_q8(2), rules=[same_quant(), _padding_with_logical_zero])

define(Op.DEPTH_TO_SPACE, summary="moves depth blocks into height and width",
       forms=[form("", "input:T block_size:i32 [@3 nchw:bool=false]", "output:T")],
       types=float_q8(1), rules=[same_quant()])

define(Op.SPACE_TO_DEPTH, summary="moves height and width blocks into depth",
       forms=[form("", "input:T block_size:i32 [@3 nchw:bool=false]", "output:T")],
       types=float_q8(1), rules=[same_quant()])

define(Op.CHANNEL_SHUFFLE, summary="interleaves channel groups along an axis",
       forms=[form("", "input:T num_groups:i32 axis:i32", "output:T")],
       types=[*types_since_3("tensor_f16", "tensor_f32", "tensor_q8"), SIGNED_Q8],
       rules=[same_quant()])
