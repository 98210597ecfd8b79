"""Element-wise unary math: one tensor in, one tensor of the same type and shape out."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

_UNARY = form("", "input:T", "output:T")
_FLOATS = [combo(3, T="tensor_f16"), combo(3, T="tensor_f32")]

define(Op.FLOOR, forms=[_UNARY], summary="floor(input), rank up to 4",
       types=[combo(1, T="tensor_f32"), combo(3, T="tensor_f16")])
define(Op.ABS, forms=[_UNARY], types=[*_FLOATS, combo(4, T="tensor_i32")], summary="|input|")
define(Op.EXP, forms=[_UNARY], types=_FLOATS, summary="e ** input")
define(Op.LOG, forms=[_UNARY], types=_FLOATS, summary="natural logarithm of input")
define(Op.RSQRT, forms=[_UNARY], types=_FLOATS, summary="1 / sqrt(input)")
define(Op.SIN, forms=[_UNARY], types=_FLOATS, summary="sin(input)")
define(Op.SQRT, forms=[_UNARY], types=_FLOATS, summary="sqrt(input)")
define(Op.NEG, forms=[_UNARY], types=[*_FLOATS, combo(3, T="tensor_i32")], summary="-input")
