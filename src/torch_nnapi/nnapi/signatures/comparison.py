"""Element-wise comparisons, logical operations and SELECT, all producing or taking TENSOR_BOOL8.

Quantized inputs of a comparison are compared by real value, so the two inputs may have
different scales and zero points; SELECT's quantized inputs and output may differ likewise.
"""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

_COMPARE = form("", "input0:T input1:T", "output:tensor_bool8")
_COMPARABLE = [*(combo(3, T=t) for t in
                 ("tensor_bool8", "tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8")),
               combo(4, T="tensor_q8_signed")]

for _op, _summary in ((Op.EQUAL, "input0 == input1"), (Op.NOT_EQUAL, "input0 != input1"),
                      (Op.GREATER, "input0 > input1"), (Op.GREATER_EQUAL, "input0 >= input1"),
                      (Op.LESS, "input0 < input1"), (Op.LESS_EQUAL, "input0 <= input1")):
    define(_op, forms=[_COMPARE], types=_COMPARABLE, summary=f"{_summary}, with broadcasting")

_BOOL = [combo(3, T="tensor_bool8")]
define(Op.LOGICAL_AND, forms=[form("", "input0:T input1:T", "output:T")], types=_BOOL,
       summary="input0 && input1, with broadcasting")
define(Op.LOGICAL_OR, forms=[form("", "input0:T input1:T", "output:T")], types=_BOOL,
       summary="input0 || input1, with broadcasting")
define(Op.LOGICAL_NOT, forms=[form("", "input:T", "output:T")], types=_BOOL, summary="!input")

define(Op.SELECT, forms=[form("", "condition:tensor_bool8 input1:T input2:T", "output:T")],
       types=[*(combo(3, T=t) for t in ("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8")),
              combo(4, T="tensor_q8_signed")],
       summary="condition ? input1 : input2, all of one shape")
