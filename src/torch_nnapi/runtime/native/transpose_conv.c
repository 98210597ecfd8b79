/* TRANSPOSE_CONV_2D's second half: adding up the input pixels' contributions.
 *
 * The first half, each input pixel times the whole filter, is a GEMM (NumPy's BLAS for float,
 * the quantized convolution kernel's exact sums for uint8). Here every output pixel gathers the
 * contributions that land on it, in increasing filter row then column, which is the order in
 * which the reference kernel scatters them -- so float results are bit-exact with it -- then
 * adds the bias and applies the activation (float) or requantizes (uint8). */

#include "kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *contributions, *bias;
    void *out;
    tnn_window g;
    float lo, hi;
    const tnn_requant *rq;
    int32_t *scratch; /* uint8 output: one row of int32 sums per thread */
} Col2im;

/* The filter taps [*first, *last) of output position o along one axis: input position
 * (o + pad - tap) / stride must be whole and inside [0, size). */
static inline void taps_for(int o, int pad, int stride, int kernel, int size, int *first,
                            int *last) {
    int lo = o + pad - (size - 1) * stride, hi = o + pad + 1;
    *first = lo < 0 ? 0 : lo;
    *last = hi < kernel ? hi : kernel;
}

TNN_VECTOR_CLONES
static void col2im_f32_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Col2im *p = arg;
    const tnn_window *g = &p->g;
    const int c = g->channels, taps = g->kernel_h * g->kernel_w;
    const float *contributions = p->contributions, *bias = p->bias;
    for (ptrdiff_t row = start; row < stop; row++) {
        int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
        int i0, i1;
        taps_for(oh, g->pad_top, g->stride_h, g->kernel_h, g->height, &i0, &i1);
        for (int ow = 0; ow < g->out_w; ow++) {
            float *out = (float *)p->out + ((size_t)row * g->out_w + ow) * c;
            int j0, j1;
            taps_for(ow, g->pad_left, g->stride_w, g->kernel_w, g->width, &j0, &j1);
            for (int k = 0; k < c; k++) out[k] = 0.0f;
            for (int i = i0; i < i1; i++) {
                if ((oh + g->pad_top - i) % g->stride_h) continue;
                int ih = (oh + g->pad_top - i) / g->stride_h;
                for (int j = j0; j < j1; j++) {
                    if ((ow + g->pad_left - j) % g->stride_w) continue;
                    int iw = (ow + g->pad_left - j) / g->stride_w;
                    const float *from = contributions +
                        ((((size_t)b * g->height + ih) * g->width + iw) * taps +
                         (size_t)i * g->kernel_w + j) * c;
                    for (int k = 0; k < c; k++) out[k] += from[k];
                }
            }
            for (int k = 0; k < c; k++) {
                float v = out[k] + bias[k];
                v = v < p->lo ? p->lo : v;
                out[k] = v > p->hi ? p->hi : v;
            }
        }
    }
}

static void col2im_q8_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const Col2im *p = arg;
    const tnn_window *g = &p->g;
    const int c = g->channels, taps = g->kernel_h * g->kernel_w;
    const int32_t *contributions = p->contributions, *bias = p->bias;
    int32_t *sums = p->scratch + (size_t)thread * g->out_w * c;
    for (ptrdiff_t row = start; row < stop; row++) {
        int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
        int i0, i1;
        taps_for(oh, g->pad_top, g->stride_h, g->kernel_h, g->height, &i0, &i1);
        for (int ow = 0; ow < g->out_w; ow++) {
            int32_t *sum = sums + (size_t)ow * c;
            int j0, j1;
            taps_for(ow, g->pad_left, g->stride_w, g->kernel_w, g->width, &j0, &j1);
            memcpy(sum, bias, (size_t)c * sizeof *sum);
            for (int i = i0; i < i1; i++) {
                if ((oh + g->pad_top - i) % g->stride_h) continue;
                int ih = (oh + g->pad_top - i) / g->stride_h;
                for (int j = j0; j < j1; j++) {
                    if ((ow + g->pad_left - j) % g->stride_w) continue;
                    int iw = (ow + g->pad_left - j) / g->stride_w;
                    const int32_t *from = contributions +
                        ((((size_t)b * g->height + ih) * g->width + iw) * taps +
                         (size_t)i * g->kernel_w + j) * c;
                    for (int k = 0; k < c; k++) sum[k] += from[k];
                }
            }
        }
        uint8_t *out = (uint8_t *)p->out + (size_t)row * g->out_w * c;
        for (int ow = 0; ow < g->out_w; ow++)
            tnn_requantize_row(sums + (size_t)ow * c, out + (size_t)ow * c, c, 0, p->rq);
    }
}

static void rows(Col2im *p, tnn_task fn, int threads) {
    const tnn_window *g = &p->g;
    ptrdiff_t count = (ptrdiff_t)g->batches * g->out_h;
    ptrdiff_t per_row = (ptrdiff_t)g->out_w * g->channels * g->kernel_h * g->kernel_w;
    tnn_parallel_for(count, tnn_grain(count, 1 + (1 << 15) / (per_row + 1), threads), threads, fn,
                     p);
}

void tnn_col2im_f32(const float *contributions, const float *bias, float *out,
                    const tnn_window *g, float lo, float hi) {
    Col2im p = {contributions, bias, out, *g, lo, hi, NULL, NULL};
    rows(&p, col2im_f32_rows, tnn_get_threads());
}

int tnn_col2im_q8(const int32_t *contributions, const int32_t *bias, uint8_t *out,
                  const tnn_window *g, const tnn_requant *rq) {
    const int threads = tnn_get_threads();
    Col2im p = {contributions, bias, out, *g, 0, 0, rq, NULL};
    p.scratch = malloc((size_t)threads * g->out_w * g->channels * sizeof *p.scratch);
    if (!p.scratch) return -1;
    rows(&p, col2im_q8_rows, threads);
    free(p.scratch);
    return 0;
}
