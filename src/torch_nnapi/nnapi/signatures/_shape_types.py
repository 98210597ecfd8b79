"""Type combinations and quantization checks shared by the shape, movement, reduction and
lookup signature families."""

from __future__ import annotations

from ._dsl import Combo, combo


# Signed 8-bit quantization came with API 30 for nearly every operation that took quant8.
SIGNED_Q8 = combo(4, T="tensor_q8_signed")


def float_q8(since_level: int) -> list[Combo]:
    """float32 and quant8 since ``since_level``, float16 since feature level 3, signed quant8
    since feature level 4."""
    return [combo(since_level, T="tensor_f32"), combo(since_level, T="tensor_q8"),
            combo(3, T="tensor_f16"), SIGNED_Q8]


def types_since_3(*short_names: str) -> list[Combo]:
    """One combination per tensor type, all introduced at feature level 3."""
    return [combo(3, T=t) for t in short_names]


# float16, float32, int32 and quant8: the usual set of the operations added in API 29, and
# signed quant8 since API 30.
ALL4 = [*types_since_3("tensor_f16", "tensor_f32", "tensor_i32", "tensor_q8"), SIGNED_Q8]


def quant_matches(a, b) -> bool:
    """Whether two operands have the same scale and zero point."""
    return (a.scale, a.zero_point) == (b.scale, b.zero_point)
