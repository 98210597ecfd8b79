/* AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on NHWC tensors (float32, uint8 and int8).
 *
 * As in the reference kernels (runtime/ops/pooling.py), padding never counts: each window
 * covers only real input elements, an average divides by their number (quantized: the integer
 * (sum + count / 2) / count), and the fused activation clamps the result. Float sums are
 * accumulated in the reference's order -- first down the window's rows, then across its
 * columns -- so results are bit-exact with it. Work is split by output rows over the pool. */

#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const void *x;
    void *out;
    tnn_window g;
    int kind;
    float lo, hi;
    int32_t qlo, qhi;
    uint8_t flip;   /* int8 data: 0x80 (values read and written 128 up), else 0 */
    float *scratch; /* per thread: one output row's column sums [width][channels] */
} Pool;

/* Float: the window's column sums (or maxima) of one output row, one input column at a time,
 * then across the columns. */
TNN_VECTOR_CLONES
static void pool_f32_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const Pool *p = arg;
    const tnn_window *g = &p->g;
    const int c = g->channels, width = g->width;
    const int max = p->kind == TNN_MAX_POOL, l2 = p->kind == TNN_L2_POOL;
    float *columns = p->scratch + (size_t)thread * width * c;
    const float lo = p->lo, hi = p->hi;
    for (ptrdiff_t row = start; row < stop; row++) {
        int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
        int i0, i1;
        int ih0 = tnn_window_taps(oh, g->stride_h, g->pad_top, 1, g->kernel_h, g->height, &i0, &i1);
        const float *image = (const float *)p->x + (size_t)b * g->height * width * c;
        const size_t n = (size_t)width * c;
        /* Down the rows: columns[w][c] over the window's input rows. */
        const float *first = image + (size_t)(ih0 + i0) * n;
        if (l2)
            for (size_t k = 0; k < n; k++) columns[k] = first[k] * first[k];
        else
            memcpy(columns, first, n * sizeof *columns);
        for (int i = i0 + 1; i < i1; i++) {
            const float *in = image + (size_t)(ih0 + i) * n;
            if (max) /* NaN wins, as in np.maximum */
                for (size_t k = 0; k < n; k++)
                    columns[k] = in[k] > columns[k] || in[k] != in[k] ? in[k] : columns[k];
            else if (l2)
                for (size_t k = 0; k < n; k++) columns[k] += in[k] * in[k];
            else
                for (size_t k = 0; k < n; k++) columns[k] += in[k];
        }
        float *out_row = (float *)p->out + (size_t)row * g->out_w * c;
        for (int ow = 0; ow < g->out_w; ow++) {
            int j0, j1;
            int iw0 = tnn_window_taps(ow, g->stride_w, g->pad_left, 1, g->kernel_w, width, &j0, &j1);
            float *out = out_row + (size_t)ow * c;
            memcpy(out, columns + (size_t)(iw0 + j0) * c, (size_t)c * sizeof *out);
            for (int j = j0 + 1; j < j1; j++) {
                const float *col = columns + (size_t)(iw0 + j) * c;
                if (max)
                    for (int k = 0; k < c; k++)
                        out[k] = col[k] > out[k] || col[k] != col[k] ? col[k] : out[k];
                else
                    for (int k = 0; k < c; k++) out[k] += col[k];
            }
            if (!max) {
                /* The count as the reference forms it: an int product, then float32. */
                const float count = (float)((i1 - i0) * (j1 - j0));
                for (int k = 0; k < c; k++) out[k] = out[k] / count;
                if (l2)
                    for (int k = 0; k < c; k++) out[k] = sqrtf(out[k]);
            }
            for (int k = 0; k < c; k++) {
                float v = out[k] < lo ? lo : out[k];
                out[k] = v > hi ? hi : v;
            }
        }
    }
}

/* 8-bit: integer sums or maxima of each window; the average rounds to the nearest integer,
 * halves away from zero: (sum + count / 2) / count for uint8; int8 values are read 128 up
 * (flip) and averaged as the int8 sums they stand for, which can be negative. */
static void pool_q8_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const Pool *p = arg;
    const tnn_window *g = &p->g;
    const int c = g->channels, width = g->width;
    const int max = p->kind == TNN_MAX_POOL;
    const uint8_t flip = p->flip;
    const int32_t offset = flip ? 128 : 0; /* what the flip added to each value */
    int32_t *columns = (int32_t *)p->scratch + (size_t)thread * width * c;
    for (ptrdiff_t row = start; row < stop; row++) {
        int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
        int i0, i1;
        int ih0 = tnn_window_taps(oh, g->stride_h, g->pad_top, 1, g->kernel_h, g->height, &i0, &i1);
        const uint8_t *image = (const uint8_t *)p->x + (size_t)b * g->height * width * c;
        const size_t n = (size_t)width * c;
        const uint8_t *first = image + (size_t)(ih0 + i0) * n;
        for (size_t k = 0; k < n; k++) columns[k] = first[k] ^ flip;
        for (int i = i0 + 1; i < i1; i++) {
            const uint8_t *in = image + (size_t)(ih0 + i) * n;
            if (max)
                for (size_t k = 0; k < n; k++) {
                    int32_t v = in[k] ^ flip;
                    columns[k] = v > columns[k] ? v : columns[k];
                }
            else
                for (size_t k = 0; k < n; k++) columns[k] += in[k] ^ flip;
        }
        uint8_t *out_row = (uint8_t *)p->out + (size_t)row * g->out_w * c;
        for (int ow = 0; ow < g->out_w; ow++) {
            int j0, j1;
            int iw0 = tnn_window_taps(ow, g->stride_w, g->pad_left, 1, g->kernel_w, width, &j0, &j1);
            const int32_t count = (i1 - i0) * (j1 - j0);
            for (int k = 0; k < c; k++) {
                int32_t v = columns[(size_t)(iw0 + j0) * c + k];
                for (int j = j0 + 1; j < j1; j++) {
                    int32_t col = columns[(size_t)(iw0 + j) * c + k];
                    v = max ? (col > v ? col : v) : v + col;
                }
                if (!max) {
                    int32_t sum = v - offset * count;
                    v = (sum >= 0 ? (sum + count / 2) / count : -((count / 2 - sum) / count)) +
                        offset;
                }
                out_row[(size_t)ow * c + k] = tnn_clamp_u8(v, p->qlo, p->qhi) ^ flip;
            }
        }
    }
}

/* kind: TNN_AVERAGE_POOL, TNN_MAX_POOL or TNN_L2_POOL (float only); dilation is 1;
 * quantized: 0 (float32), TNN_UINT8 or TNN_INT8 (qlo and qhi then given 128 up). Returns 0,
 * or -1 when out of memory. */
int tnn_pool(int kind, int quantized, const void *x, void *out, const tnn_window *g, float lo,
             float hi, int32_t qlo, int32_t qhi) {
    const int threads = tnn_get_threads();
    Pool p = {x, out, *g, kind, lo, hi, qlo, qhi, quantized == TNN_INT8 ? 0x80 : 0, NULL};
    p.scratch = malloc((size_t)threads * g->width * g->channels * 4);
    if (!p.scratch) return -1;
    ptrdiff_t rows = (ptrdiff_t)g->batches * g->out_h;
    ptrdiff_t per_row = (ptrdiff_t)g->width * g->channels * g->kernel_h;
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 15) / (per_row + 1), threads), threads,
                     quantized ? pool_q8_rows : pool_f32_rows, &p);
    free(p.scratch);
    return 0;
}
