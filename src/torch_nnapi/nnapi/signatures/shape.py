"""Shape operations: the data stays as is, only the dimensions change or get split/joined;
and the two about shapes alone: FILL (a tensor of a given shape) and RANK.

RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, FILL, RANK.
"""

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import RuleContext, combo, form, level_rule, rule
from ._registry import define
from ._rules import same_quant
from ._shape_types import ALL4, float_q8, quant_matches

_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED

define(Op.RESHAPE, summary="same values, new dimensions (one may be -1)",
       forms=[form("", "input:T shape:tensor_i32", "output:T")],
       types=float_q8(1), rules=[same_quant()])

define(Op.SQUEEZE, summary="removes dimensions of size 1 (all, or those listed)",
       forms=[form("", "input:T axes:tensor_i32?", "output:T")],
       types=float_q8(2), rules=[same_quant()])

define(Op.EXPAND_DIMS, summary="inserts a dimension of size 1",
       forms=[form("", "input:T axis:i32", "output:T")],
       types=ALL4, rules=[same_quant()])

define(Op.TRANSPOSE, summary="permutes dimensions (reverses them when perm is omitted)",
       forms=[form("", "input:T perm:tensor_i32?", "output:T")],
       types=float_q8(2), rules=[same_quant()])

define(Op.TILE, summary="repeats the input multiples[i] times along each dimension i",
       forms=[form("", "input:T multiples:tensor_i32", "output:T")],
       types=ALL4, rules=[same_quant()])


@level_rule("quant8 inputs quantized unlike the output need feature level 3")
def _concat_requantizes(ctx: RuleContext) -> int | None:
    """Before API 29 every quant8 input had to share the output's scale and zero point;
    since then inputs are requantized."""
    out = ctx.output("output")
    if out is None or out.type != _Q8:  # signed quant8 came with requantizing inputs
        return None
    return None if all(quant_matches(x, out) for x in ctx.inputs("inputs")) else 3


define(Op.CONCATENATION, summary="joins the inputs along an axis",
       forms=[form("", "inputs:T* axis:i32", "output:T")],
       types=float_q8(1), rules=[_concat_requantizes])


@rule("every quantized output has the scale and zero point of the input")
def _split_same_quant(ctx: RuleContext) -> str | None:
    x = ctx.input("input")
    if x is None or x.type not in (_Q8, _SIGNED):
        return None
    for k, out in enumerate(ctx.outputs("outputs")):
        if not quant_matches(x, out):
            return (f"output {k} must have the scale and zero point of input"
                    f" ({x.scale:g}, {x.zero_point}), got ({out.scale:g}, {out.zero_point})")
    return None


define(Op.SPLIT, summary="splits along an axis into num_splits equal parts",
       forms=[form("", "input:T axis:i32 num_splits:i32", "outputs:T*")],
       types=ALL4, rules=[_split_same_quant])

define(Op.FILL, summary="a tensor of the given shape, every element the given value",
       forms=[form("", "shape:tensor_i32 value:S", "output:T")],
       types=[combo(4, T="tensor_f16", S="f16"), combo(4, T="tensor_f32", S="f32"),
              combo(4, T="tensor_i32", S="i32")])

define(Op.RANK, summary="the number of dimensions of the input",
       forms=[form("", "input:T", "output:i32")],
       types=[combo(4, T=t) for t in ("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8",
                                      "tensor_q16s", "tensor_bool8", "tensor_q8pc",
                                      "tensor_q16a", "tensor_q8s", "tensor_q8_signed")])
