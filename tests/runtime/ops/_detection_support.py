"""Test data for the detection kernel tests."""

from __future__ import annotations

import numpy as np


def quantize(x, scale: float, zero_point: int, dtype) -> np.ndarray:
    """Test data to a quantized type (halves rounded up; exactness is not the point here)."""
    limits = np.iinfo(dtype)
    q = np.floor(np.asarray(x, np.float64) / scale + 0.5) + zero_point
    return np.clip(q, limits.min, limits.max).astype(dtype)
