"""Element-wise binary arithmetic with broadcasting and a fused activation."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

_BINARY = form("", "input0:T input1:T fuse_code:i32", "output:T")

define(Op.ADD, forms=[_BINARY], summary="input0 + input1",
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16")])
define(Op.MUL, forms=[_BINARY], summary="input0 * input1",
       types=[combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16")])
define(Op.SUB, forms=[_BINARY], summary="input0 - input1",
       types=[combo(2, T="tensor_f32"), combo(3, T="tensor_f16"), combo(3, T="tensor_q8")])
define(Op.DIV, forms=[_BINARY], summary="input0 / input1",
       types=[combo(2, T="tensor_f32"), combo(3, T="tensor_f16")])
