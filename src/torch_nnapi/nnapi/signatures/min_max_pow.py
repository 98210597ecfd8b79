"""MAXIMUM, MINIMUM and POW: element-wise binary operations with broadcasting, no activation.

Quantized MAXIMUM/MINIMUM inputs and output may each have their own scale and zero point.
"""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

_BINARY = form("", "input0:T input1:T", "output:T")
_ORDERED = [*(combo(3, T=t) for t in ("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8")),
            combo(4, T="tensor_q8_signed")]

define(Op.MAXIMUM, forms=[_BINARY], types=_ORDERED, summary="max(input0, input1)")
define(Op.MINIMUM, forms=[_BINARY], types=_ORDERED, summary="min(input0, input1)")
define(Op.POW, forms=[form("", "base:T exponent:T", "output:T")],
       types=[combo(3, T="tensor_f16"), combo(3, T="tensor_f32")], summary="base ** exponent")
