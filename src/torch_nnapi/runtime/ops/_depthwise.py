"""The depthwise convolution inner loop: a sum over the filter taps of shifted input times weight.

All taps are one strided view of the padded input, [kh, kw, n, out_h, out_w * c], and a single
einsum multiplies and accumulates them into the output in one pass, with no temporaries. With
a unit width stride the output's (width, channel) axes are one contiguous run in the input, so
the einsum's inner loop is long; other strides keep a separate channel axis.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._spatial import Window


def depthwise_accumulate(padded: np.ndarray, taps: np.ndarray, window: Window, out_h: int,
                         out_w: int) -> np.ndarray:
    """sum_{i,j} padded[n, oh*sh + i*dh, ow*sw + j*dw, c] * taps[i, j, c], for NHWC input.

    ``padded`` already carries the window's padding and has as many channels as ``taps``.
    """
    kh, kw, c = taps.shape
    n = padded.shape[0]
    s_n, s_row, s_col, s_chan = padded.strides
    if s_chan != padded.itemsize:
        padded = np.ascontiguousarray(padded)
        s_n, s_row, s_col, s_chan = padded.strides
    steps = (s_row * window.dilation_h, s_col * window.dilation_w, s_n, s_row * window.stride_h)
    if window.stride_w == 1 and s_col == c * s_chan:
        view = as_strided(padded, (kh, kw, n, out_h, out_w * c), steps + (s_chan,),
                          writeable=False)
        weights = np.tile(taps[:, :, None, :], (1, 1, out_w, 1)).reshape(kh, kw, out_w * c)
        return np.einsum("ijnrk,ijk->nrk", view, weights).reshape(n, out_h, out_w, c)
    view = as_strided(padded, (kh, kw, n, out_h, out_w, c),
                      steps + (s_col * window.stride_w, s_chan), writeable=False)
    return np.einsum("ijnrwc,ijc->nrwc", view, taps)
