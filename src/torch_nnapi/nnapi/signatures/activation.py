"""Activations (element-wise and PRELU) and normalizations (SOFTMAX, LOG_SOFTMAX, L2, LRN,
INSTANCE_NORMALIZATION).

Quantized LOGISTIC, TANH, SOFTMAX and L2_NORMALIZATION produce a fixed output quantization
(the full range of their outputs over uint8); the clamping activations keep the input's.
"""

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define
from ._rules import fixed_output_quant, ranks_before_level_3, same_quant
from ._shape_types import SIGNED_Q8

_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
_UNARY = form("", "input:T", "output:T")
_FLOAT_AND_Q8 = [combo(1, T="tensor_f32"), combo(1, T="tensor_q8"), combo(3, T="tensor_f16"),
                 SIGNED_Q8]

for _op, _summary in ((Op.RELU, "max(0, input)"), (Op.RELU1, "min(1, max(-1, input))"),
                      (Op.RELU6, "min(6, max(0, input))")):
    define(_op, forms=[_UNARY], types=_FLOAT_AND_Q8, rules=[same_quant()], summary=_summary)

define(Op.LOGISTIC, forms=[_UNARY], types=_FLOAT_AND_Q8,
       rules=[fixed_output_quant(1.0 / 256, 0), fixed_output_quant(1.0 / 256, -128,
                                                                   operand_type=_SIGNED)],
       summary="1 / (1 + exp(-input))")
define(Op.TANH, forms=[_UNARY],
       types=[combo(1, T="tensor_f32"), combo(3, T="tensor_f16"), combo(3, T="tensor_q8"),
              SIGNED_Q8],
       rules=[fixed_output_quant(1.0 / 128, 128), fixed_output_quant(1.0 / 128, 0,
                                                                     operand_type=_SIGNED)],
       summary="tanh(input)")

define(Op.PRELU, forms=[form("", "input:T alpha:T", "output:T")],
       types=[combo(3, T="tensor_f32"), combo(3, T="tensor_f16"), combo(3, T="tensor_q8"),
              SIGNED_Q8],
       summary="input >= 0 ? input : input * alpha, alpha broadcast against input")

define(Op.HARD_SWISH, forms=[_UNARY],
       types=[combo(4, T=t) for t in ("tensor_f16", "tensor_f32", "tensor_q8",
                                       "tensor_q8_signed")],
       summary="input * min(6, max(0, input + 3)) / 6 (the output may be quantized unlike the"
               " input)")
define(Op.ELU, forms=[form("", "input:T alpha:S", "output:T")],
       types=[combo(4, T="tensor_f16", S="f16"), combo(4, T="tensor_f32", S="f32")],
       summary="max(0, input) + min(0, alpha * (exp(input) - 1))")

_FLOAT_WITH_SCALAR = [combo(1, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")]

define(Op.SOFTMAX, forms=[form("", "input:T beta:S [@3 axis:i32=last]", "output:T")],
       types=[*_FLOAT_WITH_SCALAR, combo(1, T="tensor_q8", S="f32"),
              combo(4, T="tensor_q8_signed", S="f32")],
       rules=[fixed_output_quant(1.0 / 256, 0),
              fixed_output_quant(1.0 / 256, -128, operand_type=_SIGNED),
              ranks_before_level_3((2, 4))],
       summary="exp(beta * (x - max)) / sum(exp(beta * (x - max))) along axis (default -1)")
define(Op.LOG_SOFTMAX, forms=[form("", "input:T beta:S axis:i32", "output:T")],
       types=[combo(3, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")],
       summary="beta * x - log(sum(exp(beta * x))) along axis")

define(Op.L2_NORMALIZATION, forms=[form("", "input:T [@3 axis:i32=last]", "output:T")],
       types=[combo(1, T="tensor_f32"), combo(3, T="tensor_f16"), combo(3, T="tensor_q8"),
              SIGNED_Q8],
       rules=[fixed_output_quant(1.0 / 128, 128),
              fixed_output_quant(1.0 / 128, 0, operand_type=_SIGNED),
              ranks_before_level_3((4,))],
       summary="x / sqrt(sum(x * x)) along axis (default -1); 0 where all of x is 0")
define(Op.LOCAL_RESPONSE_NORMALIZATION,
       forms=[form("", "input:T radius:i32 bias:S alpha:S beta:S [@3 axis:i32=last]",
                   "output:T")],
       types=_FLOAT_WITH_SCALAR, rules=[ranks_before_level_3((4,))],
       summary="x / (bias + alpha * sum(x * x over a window of 2 * radius + 1))**beta along"
               " axis (default -1)")
define(Op.INSTANCE_NORMALIZATION,
       forms=[form("", "input:T gamma:S beta:S epsilon:S nchw:bool", "output:T")],
       types=[combo(3, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")],
       summary="(x - mean) * gamma / sqrt(variance + epsilon) + beta per batch and channel"
               " over height and width")
