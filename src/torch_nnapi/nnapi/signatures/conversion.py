"""Type conversions: CAST (ignores quantization parameters), QUANTIZE and DEQUANTIZE.

Since API 30 CAST also copies tensors of six more types to the same type, and its output,
when its shape is known, has the input's.
"""

from ..codes import OperationType as Op
from ._dsl import RuleContext, combo, form, rule
from ._registry import define

_CONVERT = form("", "input:T", "output:U")
_CASTABLE = ("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8")
_COPIED = ("tensor_bool8", "tensor_q16a", "tensor_q16s", "tensor_q8_signed", "tensor_q8s")


@rule("a known output shape equals the input's")
def _same_shape(ctx: RuleContext) -> str | None:
    x, out = ctx.input("input"), ctx.output("output")
    if not x.dimensions or not out.dimensions or 0 in out.dimensions:
        return None
    if tuple(x.dimensions) != tuple(out.dimensions):
        return (f"output has dimensions {list(out.dimensions)}, the input"
                f" {list(x.dimensions)}")
    return None


define(Op.CAST, forms=[_CONVERT], summary="input converted to the output type, saturating",
       types=[*(combo(3, T=t, U=u) for t in _CASTABLE for u in _CASTABLE),
              *(combo(4, T=t, U=t) for t in _COPIED)],
       rules=[_same_shape])
define(Op.QUANTIZE, forms=[_CONVERT], summary="round(input / scale) + zeroPoint, saturated",
       types=[*(combo(3, T=t, U="tensor_q8") for t in ("tensor_f16", "tensor_f32")),
              *(combo(4, T=t, U="tensor_q8_signed") for t in ("tensor_f16", "tensor_f32"))])
define(Op.DEQUANTIZE, forms=[_CONVERT], summary="(input - zeroPoint) * scale, rank up to 4",
       types=[combo(1, T="tensor_q8", U="tensor_f32"), combo(3, T="tensor_q8", U="tensor_f16"),
              *(combo(3, T=t, U=u) for t in ("tensor_q8s", "tensor_q8pc")
                for u in ("tensor_f16", "tensor_f32")),
              *(combo(4, T="tensor_q8_signed", U=u) for u in ("tensor_f16", "tensor_f32"))])
