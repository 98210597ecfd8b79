"""Moving TENSOR_QUANT8_ASYMM values from one scale and zero point to another.

Android's reference MAXIMUM, MINIMUM and SELECT do this through floating point rather than
fixed-point multipliers: the real value is formed in float32, divided by the new scale in
double, rounded half away from zero and saturated to 0..255. Doing the same keeps results
bit-exact.
"""

from __future__ import annotations

import numpy as np

from ..quant import round_half_away

QuantParams = tuple[float, int]  # (scale, zero point)


def requantize_uint8(values: np.ndarray, source: QuantParams, target: QuantParams) -> np.ndarray:
    """uint8 values quantized with ``source`` re-expressed with ``target``."""
    (source_scale, source_zero), (target_scale, target_zero) = source, target
    if (np.float32(source_scale), source_zero) == (np.float32(target_scale), target_zero):
        return values
    real = (values.astype(np.int32) - np.int32(source_zero)).astype(np.float32) \
        * np.float32(source_scale)
    rescaled = real.astype(np.float64) / float(np.float32(target_scale)) + target_zero
    return np.clip(round_half_away(rescaled), 0, 255).astype(np.uint8)
