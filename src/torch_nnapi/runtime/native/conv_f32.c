/* Float32 convolution pieces: the whole depthwise convolution, and around NumPy's BLAS GEMM
 * for the other convolutions the window gathering (im2col) and the bias-and-activation pass.
 *
 * Everything is NHWC. Depthwise sums the taps of each output pixel over a run of channels
 * held in a small buffer, which compilers vectorize along the channels; work is split by
 * output rows over the pool. */

#include "kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const float *x, *taps, *bias; /* taps [kernel_h][kernel_w][out_channels] */
    float *out;
    tnn_window g;
    int multiplier;
    float lo, hi;
} DepthwiseF32;

/* The common 3x3 filter with every row tap inside the image: for each run of 16 channels,
 * the 9 weight vectors stay in registers along the output row, and the columns whose window
 * is inside the image take the 9 taps unrolled. Returns the first column it did not do
 * (the right border, left to the general loop); `first` is the first inside column. */
TNN_VECTOR_CLONES
static int depthwise_3x3_row(const DepthwiseF32 *p, const float *rows, float *out_row, int first,
                             int last) {
    const tnn_window *g = &p->g;
    const int c = g->channels;
    const size_t row_stride = (size_t)g->width * c, col_stride = (size_t)g->stride_w * c;
    for (int c0 = 0; c0 + 16 <= c; c0 += 16) {
        tnn_f32x16 w[9];
        for (int t = 0; t < 9; t++) w[t] = tnn_load_f32x16(p->taps + (size_t)t * c + c0);
        const tnn_f32x16 bias = p->bias ? tnn_load_f32x16(p->bias + c0) : (tnn_f32x16){0};
        const float *x = rows + (size_t)(first * g->stride_w - g->pad_left) * c + c0;
        for (int ow = first; ow < last; ow++, x += col_stride) {
            tnn_f32x16 acc = bias;
            for (int i = 0; i < 3; i++) {
                const float *r = x + i * row_stride;
                acc += tnn_load_f32x16(r) * w[3 * i];
                acc += tnn_load_f32x16(r + c) * w[3 * i + 1];
                acc += tnn_load_f32x16(r + 2 * c) * w[3 * i + 2];
            }
            tnn_store_f32x16(out_row + (size_t)ow * c + c0, tnn_clamp_f32x16(acc, p->lo, p->hi));
        }
    }
    return c % 16 ? first : last; /* leftover channels: the general loop does these columns */
}

/* Larger filters (ConvNeXt's 7x7) with multiplier 1: four output columns whose windows are
 * inside the image at once, each weight vector loaded once for the four; every output sums its
 * taps in the order the general loop does (bias, then row by row, column by column), so the
 * results are the same. Channels in whole runs of 16; returns the next column. */
TNN_VECTOR_INLINE int depthwise_four_columns(const DepthwiseF32 *p, const float *image, int ih0,
                                             int i0, int i1, float *out_row, int ow) {
    const tnn_window *g = &p->g;
    const int c = g->channels;
    const size_t col_stride = (size_t)g->stride_w * c, tap_stride = (size_t)g->dilation_w * c;
    const float *x = image + (size_t)(ow * g->stride_w - g->pad_left) * c;
    for (int c0 = 0; c0 + 16 <= c; c0 += 16) {
        const tnn_f32x16 bias = p->bias ? tnn_load_f32x16(p->bias + c0) : (tnn_f32x16){0};
        tnn_f32x16 acc0 = bias, acc1 = bias, acc2 = bias, acc3 = bias;
        for (int i = i0; i < i1; i++) {
            const float *in = x + (size_t)(ih0 + i * g->dilation_h) * g->width * c + c0;
            const float *w_row = p->taps + (size_t)i * g->kernel_w * c + c0;
            for (int j = 0; j < g->kernel_w; j++, in += tap_stride) {
                const tnn_f32x16 w = tnn_load_f32x16(w_row + (size_t)j * c);
                acc0 += tnn_load_f32x16(in) * w;
                acc1 += tnn_load_f32x16(in + col_stride) * w;
                acc2 += tnn_load_f32x16(in + 2 * col_stride) * w;
                acc3 += tnn_load_f32x16(in + 3 * col_stride) * w;
            }
        }
        float *out = out_row + (size_t)ow * c + c0;
        tnn_store_f32x16(out, tnn_clamp_f32x16(acc0, p->lo, p->hi));
        tnn_store_f32x16(out + c, tnn_clamp_f32x16(acc1, p->lo, p->hi));
        tnn_store_f32x16(out + 2 * c, tnn_clamp_f32x16(acc2, p->lo, p->hi));
        tnn_store_f32x16(out + 3 * c, tnn_clamp_f32x16(acc3, p->lo, p->hi));
    }
    return ow + 4;
}

TNN_VECTOR_CLONES
static void depthwise_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const DepthwiseF32 *p = arg;
    const tnn_window *g = &p->g;
    const int channels = g->channels * p->multiplier;
    const float lo = p->lo, hi = p->hi;
    const int fast = p->multiplier == 1 && g->kernel_h == 3 && g->kernel_w == 3 &&
                     g->dilation_h == 1 && g->dilation_w == 1;
    /* Columns whose 3-wide window is inside the image: [first_inside, last_inside). */
    const int first_inside = (g->pad_left + g->stride_w - 1) / g->stride_w;
    const int last_inside = TNN_MAX(first_inside,
                                    TNN_MIN(g->out_w, (g->width - 3 + g->pad_left) / g->stride_w + 1));
    /* Other filters: columns whose whole window is inside the image, [first_whole,
     * last_whole), four at a time (multiplier 1). */
    const int blocked = !fast && p->multiplier == 1 && g->kernel_w > 1 && channels % 16 == 0;
    const int span = (g->kernel_w - 1) * g->dilation_w;
    const int first_whole = (g->pad_left + g->stride_w - 1) / g->stride_w;
    const int last_whole = g->width - 1 - span + g->pad_left < 0 ? 0 :
        TNN_MIN(g->out_w, (g->width - 1 - span + g->pad_left) / g->stride_w + 1);
    for (ptrdiff_t row = start; row < stop; row++) {
        int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
        int i0, i1;
        int ih0 = tnn_window_taps(oh, g->stride_h, g->pad_top, g->dilation_h, g->kernel_h,
                                  g->height, &i0, &i1);
        const float *image = p->x + (size_t)b * g->height * g->width * g->channels;
        float *out_row = p->out + (size_t)row * g->out_w * channels;
        int skip_from = g->out_w, skip_to = g->out_w; /* columns done by the 3x3 path */
        if (fast && i0 == 0 && i1 == 3 && first_inside < last_inside) {
            skip_from = first_inside;
            skip_to = depthwise_3x3_row(p, image + (size_t)ih0 * g->width * g->channels,
                                        out_row, first_inside, last_inside);
        }
        for (int ow = 0; ow < g->out_w; ow++) {
            if (ow == skip_from) ow = skip_to;
            if (ow >= g->out_w) break;
            while (blocked && ow >= first_whole && ow + 4 <= last_whole)
                ow = depthwise_four_columns(p, image, ih0, i0, i1, out_row, ow);
            if (ow >= g->out_w) break;
            int j0, j1;
            int iw0 = tnn_window_taps(ow, g->stride_w, g->pad_left, g->dilation_w, g->kernel_w,
                                      g->width, &j0, &j1);
            float *out = out_row + (size_t)ow * channels;
            int c0 = 0;
            if (p->multiplier == 1) {
                /* Runs of 16 channels held in a local array across all taps (in registers). */
                for (; c0 + 16 <= channels; c0 += 16) {
                    tnn_f32x16 acc = p->bias ? tnn_load_f32x16(p->bias + c0) : (tnn_f32x16){0};
                    for (int i = i0; i < i1; i++) {
                        const float *in_row =
                            image + (size_t)(ih0 + i * g->dilation_h) * g->width * g->channels + c0;
                        const float *w_row = p->taps + (size_t)i * g->kernel_w * channels + c0;
                        for (int j = j0; j < j1; j++)
                            acc += tnn_load_f32x16(in_row + (size_t)(iw0 + j * g->dilation_w) *
                                                                g->channels) *
                                   tnn_load_f32x16(w_row + (size_t)j * channels);
                    }
                    tnn_store_f32x16(out + c0, tnn_clamp_f32x16(acc, lo, hi));
                }
            }
            for (int c = c0; c < channels; c++) {
                float acc = p->bias ? p->bias[c] : 0.0f;
                for (int i = i0; i < i1; i++) {
                    const float *in_row =
                        image + (size_t)(ih0 + i * g->dilation_h) * g->width * g->channels;
                    for (int j = j0; j < j1; j++)
                        acc += in_row[(size_t)(iw0 + j * g->dilation_w) * g->channels +
                                      c / p->multiplier] *
                               p->taps[((size_t)i * g->kernel_w + j) * channels + c];
                }
                float v = acc < lo ? lo : acc;
                out[c] = v > hi ? hi : v;
            }
        }
    }
}

void tnn_depthwise_f32(const float *x, const float *taps, const float *bias, float *out,
                       const tnn_window *g, int multiplier, float lo, float hi) {
    DepthwiseF32 p = {x, taps, bias, out, *g, multiplier, lo, hi};
    ptrdiff_t rows = (ptrdiff_t)g->batches * g->out_h;
    ptrdiff_t per_row = (ptrdiff_t)g->out_w * g->channels * multiplier * g->kernel_h * g->kernel_w;
    int threads = tnn_get_threads();
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 15) / (per_row + 1), threads), threads,
                     depthwise_rows, &p);
}

/* ------------------------------------------------------------------ im2col */

typedef struct {
    const float *x;
    float *columns; /* [rows][kernel_h * kernel_w * channels] */
    tnn_window g;
    ptrdiff_t first_row;
} Im2colF32;

static void im2col_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Im2colF32 *p = arg;
    const tnn_window *g = &p->g;
    const size_t c = (size_t)g->channels, k = (size_t)g->kernel_h * g->kernel_w * c;
    for (ptrdiff_t r = start; r < stop; r++) {
        ptrdiff_t m = p->first_row + r;
        int ow = (int)(m % g->out_w);
        int oh = (int)((m / g->out_w) % g->out_h);
        int b = (int)(m / ((ptrdiff_t)g->out_w * g->out_h));
        float *col = p->columns + (size_t)r * k;
        const float *image = p->x + (size_t)b * g->height * g->width * c;
        for (int i = 0; i < g->kernel_h; i++) {
            int ih = oh * g->stride_h - g->pad_top + i * g->dilation_h;
            for (int j = 0; j < g->kernel_w; j++) {
                int iw = ow * g->stride_w - g->pad_left + j * g->dilation_w;
                float *dst = col + ((size_t)i * g->kernel_w + j) * c;
                if (ih < 0 || ih >= g->height || iw < 0 || iw >= g->width)
                    memset(dst, 0, c * sizeof(float));
                else
                    memcpy(dst, image + ((size_t)ih * g->width + iw) * c, c * sizeof(float));
            }
        }
    }
}

void tnn_im2col_f32(const float *x, float *columns, const tnn_window *g, ptrdiff_t first_row,
                    ptrdiff_t rows) {
    Im2colF32 p = {x, columns, *g, first_row};
    ptrdiff_t k = (ptrdiff_t)g->kernel_h * g->kernel_w * g->channels;
    int threads = tnn_get_threads();
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 14) / (k + 1), threads), threads, im2col_rows,
                     &p);
}

/* ------------------------------------------------------------------ GEMM convolution */

typedef struct {
    const float *x, *filter, *bias;
    float *out;
    tnn_window g;
    int out_channels, groups, group_in, group_out, k;
    ptrdiff_t rows, row_block;
    int column_block, column_chunks;
    int pointwise;
    float lo, hi;
    float *scratch; /* per thread: row_block gathered windows of one group */
} ConvF32;

/* Gathers output pixels [m0, m0 + count)'s windows over group `group`'s channels. */
static void gather_f32(const ConvF32 *p, ptrdiff_t m0, int count, int group, float *rows) {
    const tnn_window *g = &p->g;
    const size_t c = (size_t)p->group_in;
    for (int r = 0; r < count; r++) {
        ptrdiff_t m = m0 + r;
        int ow = (int)(m % g->out_w), oh = (int)((m / g->out_w) % g->out_h);
        int b = (int)(m / ((ptrdiff_t)g->out_w * g->out_h));
        const float *image = p->x + (size_t)b * g->height * g->width * g->channels + group * c;
        float *row = rows + (size_t)r * p->k;
        for (int i = 0; i < g->kernel_h; i++) {
            int ih = oh * g->stride_h - g->pad_top + i * g->dilation_h;
            for (int j = 0; j < g->kernel_w; j++) {
                int iw = ow * g->stride_w - g->pad_left + j * g->dilation_w;
                float *dst = row + ((size_t)i * g->kernel_w + j) * c;
                if (ih < 0 || ih >= g->height || iw < 0 || iw >= g->width)
                    memset(dst, 0, c * sizeof *dst);
                else
                    memcpy(dst, image + ((size_t)ih * g->width + iw) * g->channels,
                           c * sizeof *dst);
            }
        }
    }
}

TNN_VECTOR_CLONES
static void bias_activation_block(float *out, ptrdiff_t stride, int rows, int cols,
                                  const float *bias, float lo, float hi) {
    for (int r = 0; r < rows; r++) {
        float *row = out + r * stride;
        for (int c = 0; c < cols; c++) {
            float v = row[c] + bias[c];
            v = v < lo ? lo : v;
            row[c] = v > hi ? hi : v;
        }
    }
}

static void conv_f32_blocks(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const ConvF32 *p = arg;
    float *rows = p->scratch + (size_t)thread * p->row_block * p->k;
    for (ptrdiff_t item = start; item < stop; item++) {
        ptrdiff_t block = item / p->column_chunks;
        int chunk = (int)(item % p->column_chunks);
        ptrdiff_t m0 = block * p->row_block;
        int count = (int)TNN_MIN(p->row_block, p->rows - m0);
        int n0 = chunk * p->column_block;
        int cols = TNN_MIN(p->column_block, p->group_out - n0);
        for (int group = 0; group < p->groups; group++) {
            const float *a;
            ptrdiff_t lda;
            if (p->pointwise) {
                a = p->x + (size_t)m0 * p->g.channels + (size_t)group * p->group_in;
                lda = p->g.channels;
            } else {
                gather_f32(p, m0, count, group, rows);
                a = rows;
                lda = p->k;
            }
            int channel = group * p->group_out + n0;
            float *c = p->out + (size_t)m0 * p->out_channels + channel;
            tnn_sgemm_nt(count, cols, p->k, a, lda, p->filter + (size_t)channel * p->k, p->k, c,
                         p->out_channels);
            bias_activation_block(c, p->out_channels, count, cols, p->bias + channel, p->lo,
                                  p->hi);
        }
    }
}

/* Below this many multiply-adds (some microseconds of work) a convolution stays on one
 * thread: waking another costs more. */
#define PARALLEL_MACS 262144.0

int tnn_conv_f32(const float *x, const float *filter, const float *bias, float *out,
                 const tnn_window *g, int out_channels, int groups, float lo, float hi) {
    const double macs = (double)g->batches * g->out_h * g->out_w * out_channels *
                        g->kernel_h * g->kernel_w * (g->channels / groups);
    const int threads = macs < PARALLEL_MACS ? 1 : tnn_get_threads();
    ConvF32 p = {x, filter, bias, out, *g, out_channels, groups, g->channels / groups,
                 out_channels / groups, 0, 0, 0, 0, 1, 0, lo, hi, NULL};
    p.k = g->kernel_h * g->kernel_w * p.group_in;
    p.rows = (ptrdiff_t)g->batches * g->out_h * g->out_w;
    p.pointwise = g->kernel_h == 1 && g->kernel_w == 1 && g->stride_h == 1 && g->stride_w == 1 &&
                  g->pad_top == 0 && g->pad_left == 0 && g->out_h == g->height &&
                  g->out_w == g->width;
    /* Few large GEMMs (OpenBLAS repacks the filter for each): one block of rows per thread
     * and a few more to balance the load, the gathered windows of a block (non-pointwise)
     * within 2 MiB. */
    ptrdiff_t blocks = threads == 1 ? 1 : 3 * (ptrdiff_t)threads;
    p.row_block = (p.rows + blocks - 1) / blocks;
    if (!p.pointwise) p.row_block = TNN_MIN(p.row_block, (ptrdiff_t)(524288 / TNN_MAX(p.k, 1)));
    p.row_block = TNN_MAX((ptrdiff_t)1, (p.row_block + 15) / 16 * 16);
    ptrdiff_t row_blocks = (p.rows + p.row_block - 1) / p.row_block;
    /* Fewer row blocks than threads (small images, fully connected layers): split the output
     * channels too, in multiples of 16. */
    p.column_block = p.group_out;
    if (threads > 1 && row_blocks < 2 * threads && p.group_out >= 32) {
        int chunks = (int)TNN_MIN((ptrdiff_t)(p.group_out / 16),
                                  (2 * threads + row_blocks - 1) / row_blocks);
        p.column_block = (p.group_out + chunks - 1) / chunks;
        p.column_block = (p.column_block + 15) / 16 * 16;
    }
    p.column_chunks = (p.group_out + p.column_block - 1) / p.column_block;
    if (!p.pointwise) {
        p.scratch = malloc((size_t)threads * p.row_block * p.k * sizeof *p.scratch);
        if (!p.scratch) return -1;
    }
    tnn_parallel_for(row_blocks * p.column_chunks, 1, threads, conv_f32_blocks, &p);
    free(p.scratch);
    return 0;
}

/* ------------------------------------------------------------------ bias and activation */

typedef struct {
    float *data; /* [rows][columns] */
    const float *bias; /* [columns] or NULL */
    ptrdiff_t columns;
    float lo, hi;
} BiasActivation;

TNN_VECTOR_CLONES
static void bias_activation_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const BiasActivation *p = arg;
    const ptrdiff_t n = p->columns;
    const float lo = p->lo, hi = p->hi;
    for (ptrdiff_t r = start; r < stop; r++) {
        float *row = p->data + r * n;
        if (p->bias) {
            const float *bias = p->bias;
            for (ptrdiff_t c = 0; c < n; c++) {
                float v = row[c] + bias[c];
                v = v < lo ? lo : v;
                row[c] = v > hi ? hi : v;
            }
        } else {
            for (ptrdiff_t c = 0; c < n; c++) {
                float v = row[c];
                v = v < lo ? lo : v;
                row[c] = v > hi ? hi : v;
            }
        }
    }
}

void tnn_bias_activation_f32(float *data, const float *bias, ptrdiff_t rows, ptrdiff_t columns,
                             float lo, float hi) {
    BiasActivation p = {data, bias, columns, lo, hi};
    int threads = tnn_get_threads();
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 15) / (columns + 1), threads), threads,
                     bias_activation_rows, &p);
}
