"""Type conversions: CAST (ignores quantization parameters), QUANTIZE and DEQUANTIZE."""

from ..codes import OperationType as Op
from ._dsl import combo, form
from ._registry import define

_CONVERT = form("", "input:T", "output:U")
_CASTABLE = ("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8")

define(Op.CAST, forms=[_CONVERT], summary="input converted to the output type, saturating",
       types=[combo(3, T=t, U=u) for t in _CASTABLE for u in _CASTABLE])
define(Op.QUANTIZE, forms=[_CONVERT], summary="round(input / scale) + zeroPoint, saturated",
       types=[combo(3, T=t, U="tensor_q8") for t in ("tensor_f16", "tensor_f32")])
define(Op.DEQUANTIZE, forms=[_CONVERT], summary="(input - zeroPoint) * scale, rank up to 4",
       types=[combo(1, T="tensor_q8", U="tensor_f32"), combo(3, T="tensor_q8", U="tensor_f16"),
              *(combo(3, T=t, U=u) for t in ("tensor_q8s", "tensor_q8pc")
                for u in ("tensor_f16", "tensor_f32"))])
