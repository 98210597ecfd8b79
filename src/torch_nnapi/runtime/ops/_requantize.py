"""Moving asymmetric 8-bit values (uint8, or int8 since API 30) from one scale and zero point
to another.

Android's reference MAXIMUM, MINIMUM and SELECT do this through floating point rather than
fixed-point multipliers: the real value is formed in float32, divided by the new scale in
double, rounded half away from zero and saturated to the type's range. Doing the same keeps
results bit-exact.
"""

from __future__ import annotations

import numpy as np

from ..context import KernelContext
from ..quant import ASYMM_8BIT, round_half_away, saturate

QuantParams = tuple[float, int]  # (scale, zero point)


def requantize_8bit(values: np.ndarray, source: QuantParams, target: QuantParams) -> np.ndarray:
    """8-bit values quantized with ``source`` re-expressed with ``target``, same dtype."""
    (source_scale, source_zero), (target_scale, target_zero) = source, target
    if (np.float32(source_scale), source_zero) == (np.float32(target_scale), target_zero):
        return values
    real = (values.astype(np.int32) - np.int32(source_zero)).astype(np.float32) \
        * np.float32(source_scale)
    rescaled = real.astype(np.float64) / float(np.float32(target_scale)) + target_zero
    return saturate(round_half_away(rescaled), values.dtype)


def in_output_terms(ctx: KernelContext, name: str) -> np.ndarray:
    """Input ``name``'s values, requantized to the output's scale and zero point when they
    are asymmetric 8-bit (the other types need nothing)."""
    if ctx.input_type(name) in ASYMM_8BIT:
        return requantize_8bit(ctx.input(name), ctx.input_quant(name), ctx.output_quant())
    return ctx.input(name)
