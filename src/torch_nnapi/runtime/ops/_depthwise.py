"""The depthwise convolution inner loop: a sum of shifted multiply-adds over the filter taps."""

from __future__ import annotations

import numpy as np

from ._spatial import Window, tap


def depthwise_accumulate(padded: np.ndarray, taps: np.ndarray, window: Window, out_h: int,
                         out_w: int) -> np.ndarray:
    """sum_{i,j} padded[n, oh*sh + i*dh, ow*sw + j*dw, c] * taps[i, j, c], for NHWC input.

    ``padded`` already carries the window's padding and has as many channels as ``taps``.
    """
    kh, kw, _ = taps.shape
    acc = None
    scratch = None
    for i in range(kh):
        for j in range(kw):
            view = tap(padded, window, i, j, out_h, out_w)
            if acc is None:
                acc = view * taps[i, j]
                scratch = np.empty_like(acc)
            else:
                np.multiply(view, taps[i, j], out=scratch)
                acc += scratch
    return acc
