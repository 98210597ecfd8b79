/* Convolution geometry shared by the float and quantized convolution kernels. */

#ifndef TNN_CONV_H
#define TNN_CONV_H

#include "tnn.h"

/* An NHWC convolution or pooling window: input [batches, height, width, channels] ->
 * output [batches, out_h, out_w, ...]. Pads are the top and left padding; the bottom and
 * right ones follow from the output size. */
typedef struct {
    int batches, height, width, channels;
    int out_h, out_w;
    int kernel_h, kernel_w;
    int stride_h, stride_w;
    int dilation_h, dilation_w;
    int pad_top, pad_left;
} tnn_window;

/* The first input row (or column) a window at output position `o` reads, and the range
 * [*first, *last) of its taps that fall inside [0, size). */
static inline int tnn_window_taps(int o, int stride, int pad, int dilation, int taps, int size,
                                  int *first, int *last) {
    int origin = o * stride - pad;
    int lo = 0, hi = taps;
    if (origin < 0) lo = (-origin + dilation - 1) / dilation;
    if (origin + (taps - 1) * dilation >= size) {
        int beyond = size - 1 - origin; /* last index still inside */
        hi = beyond < 0 ? 0 : beyond / dilation + 1;
    }
    *first = lo;
    *last = hi < lo ? lo : hi;
    return origin;
}

#endif
