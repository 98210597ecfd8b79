"""Element-wise binary arithmetic with broadcasting and a fused activation.

Int32 arithmetic (API 30) takes no activation: its fuse code must be NONE. Int32 DIV rounds
towards negative infinity, as Python's ``//``.
"""

from ..codes import FuseCode, OperandType
from ..codes import OperationType as Op
from ._dsl import RuleContext, combo, form, rule
from ._registry import define

_BINARY = form("", "input0:T input1:T fuse_code:i32", "output:T")
_INT32 = combo(4, T="tensor_i32")
_SIGNED = combo(4, T="tensor_q8_signed")


@rule("int32 arithmetic has fuse code NONE")
def _int32_unfused(ctx: RuleContext) -> str | None:
    fuse = ctx.input("fuse_code")
    if ctx.type_of("T") != OperandType.TENSOR_INT32 or fuse.value is None:
        return None
    if int(fuse.value) != FuseCode.NONE:
        return f"int32 arithmetic takes fuse code NONE (0), got {int(fuse.value)}"
    return None


define(Op.ADD, forms=[_BINARY], summary="input0 + input1", rules=[_int32_unfused],
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16"),
              _SIGNED, _INT32])
define(Op.MUL, forms=[_BINARY], summary="input0 * input1", rules=[_int32_unfused],
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16"),
              _SIGNED, _INT32])
define(Op.SUB, forms=[_BINARY], summary="input0 - input1", rules=[_int32_unfused],
       types=[combo(2, T="tensor_f32"), combo(3, T="tensor_f16"), combo(3, T="tensor_q8"),
              _SIGNED, _INT32])
define(Op.DIV, forms=[_BINARY], summary="input0 / input1 (int32: rounded down)",
       rules=[_int32_unfused],
       types=[combo(2, T="tensor_f32"), combo(3, T="tensor_f16"), _INT32])
