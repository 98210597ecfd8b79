"""The depthwise convolution inner loop: a sum over the filter taps of shifted input times weight.

The taps are one strided view of the padded input, [kh, kw, n, out_h, out_w, c], and a single
einsum multiplies and accumulates them into the output in one pass, with no temporaries. With
a unit width stride the (width, channel) elements of an output row are contiguous in the input,
so runs of several columns' channels become one longer inner axis, against weights repeated
across those columns. (Splitting strided inputs into column phases to get the same long axis
measured slower than the plain strided view.) Large outputs go by row blocks, optionally on
several threads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._parallel import for_row_blocks
from .spatial import Window, pad_image

# Inner loop length aimed at: long enough to amortize the loop, short enough that the
# repeated weights stay in the fastest cache (measured best around a thousand).
_INNER_ELEMENTS = 1024


def depthwise_accumulate(x: np.ndarray, taps: np.ndarray, window: Window, out_h: int,
                         out_w: int, out: np.ndarray | None = None,
                         finish: Callable[[int, int], None] | None = None) -> np.ndarray:
    """sum_{i,j} xpad[n, oh*sh + i*dh, ow*sw + j*dw, c] * taps[i, j, c] for NHWC ``x``.

    ``x`` has as many channels as ``taps`` and is padded here as ``window`` says. The sums go
    to ``out`` (a new array if None); ``finish(start, stop)`` is called on each block of
    output rows right after its sums, on the same thread.
    """
    kh, kw, c = taps.shape
    padded = np.ascontiguousarray(pad_image(x, window))
    n = padded.shape[0]
    s_n, s_row, s_col, s_chan = padded.strides
    outer = (s_row * window.dilation_h, s_col * window.dilation_w, s_n, s_row * window.stride_h)
    if out is None:
        out = np.empty((n, out_h, out_w, c), dtype=np.result_type(padded, taps))
    if window.stride_w == 1:
        # Runs of `group` adjacent columns' channels, about a thousand elements long.
        group = max(g for g in range(1, out_w + 1)
                    if out_w % g == 0 and g * c <= max(c, _INNER_ELEMENTS))
        inner, inner_strides = (out_w // group, group * c), (s_col * group, s_chan)
        weights = np.broadcast_to(taps[:, :, None, :], (kh, kw, group, c)).reshape(kh, kw, -1)
        subscripts = "ijnrgk,ijk->nrgk"
        result = out.reshape(n, out_h, out_w // group, group * c)
    else:
        inner, inner_strides = (out_w, c), (s_col * window.stride_w, s_chan)
        weights, subscripts, result = taps, "ijnrwc,ijc->nrwc", out

    def rows(start: int, stop: int) -> None:
        view = as_strided(padded[:, start * window.stride_h:],
                          (kh, kw, n, stop - start, *inner), outer + inner_strides,
                          writeable=False)
        np.einsum(subscripts, view, weights, out=result[:, start:stop])
        if finish is not None:
            finish(start, stop)

    for_row_blocks(out_h, n * out_w * c, rows)
    return out
