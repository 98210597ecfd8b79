/* 8-bit quantized CONV_2D, GROUPED_CONV_2D, FULLY_CONNECTED and DEPTHWISE_CONV_2D.
 *
 * A plan holds what only depends on the constant operands: packed weights w' = w - w_zero,
 * the bias with x_zero * sum(w') folded in, and the requantization. Running it gathers MR
 * output pixels' windows (im2col, padding filled with x_zero) into a panel, multiplies the
 * panel by each block of NR output channels, and requantizes the tile straight to the output.
 * Work is split over the pool by tiles of rows and, when there are few rows (a fully connected
 * layer on one input), by blocks of output channels. */

#include "kernels.h"
#include "q8.h"

#include <stdlib.h>
#include <string.h>

struct tnn_q8_conv {
    tnn_q8_shape shape;
    int out_channels, groups, group_out; /* output channels in all and per group */
    int kernel_h, kernel_w, group_in;    /* filter [out][kernel_h][kernel_w][group_in] */
    int k, padded_k;
    uint8_t input_zero;
    uint8_t flip;    /* 0x80 for int8 data (zero points and bounds given 128 up), else 0 */
    void *packed;    /* per group: ceil(group_out / nr) blocks */
    size_t group_bytes;
    int32_t *bias;   /* bias - x_zero * sum(w'), per output channel */
    int32_t *multiplier, *shift;
    tnn_requant rq;
};

void tnn_q8_conv_free(tnn_q8_conv *plan) {
    if (!plan) return;
    free(plan->packed);
    free(plan->bias);
    free(plan->multiplier);
    free(plan->shift);
    free(plan);
}

/* filter: [out_channels][kernel_h][kernel_w][group_in] uint8 (w_zero) or int8 (per channel,
 * w_zero 0: `signed_filter`); multiplier/shift: out_channels values or one; kind_limit: the
 * widest microkernel to use (the tests run each); signed_data: the input and output are int8
 * (TENSOR_QUANT8_ASYMM_SIGNED), their zero points and bounds given 128 up, in the uint8
 * domain where the arithmetic is the same. Returns NULL when out of memory. The caller has
 * checked that the sums fit int32. */
tnn_q8_conv *tnn_q8_conv_create(const void *filter, int signed_filter, int w_zero,
                                const int32_t *bias, int out_channels, int kernel_h,
                                int kernel_w, int group_in, int groups, int input_zero,
                                const int32_t *multiplier, const int32_t *shift, int per_channel,
                                int output_zero, int lo, int hi, int kind_limit,
                                int signed_data) {
    tnn_q8_conv *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    const int k = kernel_h * kernel_w * group_in;
    const int group_out = out_channels / groups;
    int16_t *w = malloc((size_t)out_channels * k * sizeof *w);
    int channels = per_channel ? out_channels : 1;
    p->bias = malloc((size_t)out_channels * sizeof *p->bias);
    p->multiplier = malloc((size_t)channels * sizeof *p->multiplier);
    p->shift = malloc((size_t)channels * sizeof *p->shift);
    if (!w || !p->bias || !p->multiplier || !p->shift) goto fail;
    int w_min = 0, w_max = 0;
    for (int o = 0; o < out_channels; o++) {
        int64_t sum = 0;
        for (int i = 0; i < k; i++) {
            size_t at = (size_t)o * k + i;
            int v = signed_filter ? ((const int8_t *)filter)[at]
                                  : ((const uint8_t *)filter)[at] - w_zero;
            w[at] = (int16_t)v;
            sum += v;
            w_min = TNN_MIN(w_min, v);
            w_max = TNN_MAX(w_max, v);
        }
        p->bias[o] = (int32_t)((int64_t)bias[o] - (int64_t)input_zero * sum);
    }
    p->shape = tnn_q8_shape_of(tnn_q8_best_kind(w_min, w_max, (tnn_q8_kind)kind_limit));
    p->out_channels = out_channels;
    p->groups = groups;
    p->group_out = group_out;
    p->kernel_h = kernel_h;
    p->kernel_w = kernel_w;
    p->group_in = group_in;
    p->k = k;
    p->padded_k = tnn_q8_padded_k(p->shape, k);
    p->input_zero = (uint8_t)input_zero;
    p->flip = signed_data ? 0x80 : 0;
    p->group_bytes = tnn_q8_packed_size(p->shape, group_out, k);
    p->packed = malloc(p->group_bytes * groups + 64);
    if (!p->packed) goto fail;
    for (int g = 0; g < groups; g++)
        tnn_q8_pack_weights(p->shape, w + (size_t)g * group_out * k, group_out, k,
                            (char *)p->packed + g * p->group_bytes);
    free(w);
    memcpy(p->multiplier, multiplier, (size_t)channels * sizeof *p->multiplier);
    memcpy(p->shift, shift, (size_t)channels * sizeof *p->shift);
    int any_left = 0;
    for (int c = 0; c < channels; c++) any_left |= shift[c] > 0;
    p->rq = (tnn_requant){p->multiplier, p->shift, per_channel, any_left, output_zero, lo, hi,
                          p->flip};
    return p;
fail:
    free(w);
    tnn_q8_conv_free(p);
    return NULL;
}

int tnn_q8_conv_kind(const tnn_q8_conv *plan) { return plan->shape.kind; }

int tnn_q8_conv_fits(const tnn_q8_conv *plan, const tnn_window *g) {
    int fits = g->kernel_h == plan->kernel_h && g->kernel_w == plan->kernel_w &&
               g->channels == plan->group_in * plan->groups;
    return fits ? plan->out_channels : 0;
}

/* ------------------------------------------------------------------ running */

typedef struct {
    const tnn_q8_conv *p;
    const uint8_t *x;
    uint8_t *out;    /* requantized outputs, or NULL: */
    int32_t *sums;   /* the int32 sums (bias included) */
    tnn_window g;
    ptrdiff_t rows, row_tiles;
    int channel_chunks, blocks_per_chunk;
    int pointwise; /* 1x1, stride 1, no padding: rows are the input pixels themselves */
    char *scratch; /* per thread: gathered rows, the packed panel, one tile of sums */
    size_t rows_bytes, panel_bytes, scratch_bytes;
} ConvRun;

/* Gathers output pixel m's window for group `group` into `row` (k values). */
static void gather_window(const ConvRun *run, ptrdiff_t m, int group, uint8_t *row) {
    const tnn_q8_conv *p = run->p;
    const tnn_window *g = &run->g;
    int ow = (int)(m % g->out_w);
    int oh = (int)((m / g->out_w) % g->out_h);
    int b = (int)(m / ((ptrdiff_t)g->out_w * g->out_h));
    const uint8_t *image = run->x + (size_t)b * g->height * g->width * g->channels +
                           (size_t)group * p->group_in;
    const size_t c = (size_t)p->group_in;
    for (int i = 0; i < p->kernel_h; i++) {
        int ih = oh * g->stride_h - g->pad_top + i * g->dilation_h;
        for (int j = 0; j < p->kernel_w; j++) {
            int iw = ow * g->stride_w - g->pad_left + j * g->dilation_w;
            uint8_t *dst = row + ((size_t)i * p->kernel_w + j) * c;
            if (ih < 0 || ih >= g->height || iw < 0 || iw >= g->width)
                memset(dst, p->input_zero ^ p->flip, c); /* as stored: packing flips it */
            else
                memcpy(dst, image + ((size_t)ih * g->width + iw) * g->channels, c);
        }
    }
}

static void conv_tiles(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const ConvRun *run = arg;
    const tnn_q8_conv *p = run->p;
    const tnn_q8_shape s = p->shape;
    uint8_t *rows = (uint8_t *)(run->scratch + (size_t)thread * run->scratch_bytes);
    void *panel = rows + run->rows_bytes;
    int32_t *acc = (int32_t *)((char *)panel + run->panel_bytes);
    const size_t block_bytes = (size_t)p->padded_k * s.nr * (s.kind == TNN_Q8_VNNI ? 1 : 2);
    const int blocks = (p->group_out + s.nr - 1) / s.nr;

    for (ptrdiff_t item = start; item < stop; item++) {
        ptrdiff_t tile = item / run->channel_chunks;
        int chunk = (int)(item % run->channel_chunks);
        ptrdiff_t m0 = tile * s.mr;
        int count = (int)TNN_MIN((ptrdiff_t)s.mr, run->rows - m0);
        int first_block = chunk * run->blocks_per_chunk;
        int last_block = TNN_MIN(blocks, first_block + run->blocks_per_chunk);
        for (int group = 0; group < p->groups; group++) {
            if (run->pointwise) {
                tnn_q8_pack_inputs(s, run->x + (size_t)m0 * run->g.channels +
                                          (size_t)group * p->group_in,
                                   run->g.channels, count, p->k, p->flip, panel);
            } else {
                for (int r = 0; r < count; r++)
                    gather_window(run, m0 + r, group, rows + (size_t)r * p->k);
                tnn_q8_pack_inputs(s, rows, p->k, count, p->k, p->flip, panel);
            }
            const char *packed = (const char *)p->packed + group * p->group_bytes;
            for (int block = first_block; block < last_block; block++) {
                int col = block * s.nr;
                int cols = TNN_MIN(s.nr, p->group_out - col);
                int channel = group * p->group_out + col;
                tnn_q8_tile(s, p->padded_k, panel, packed + block * block_bytes, acc);
                if (run->out) {
                    tnn_q8_store_tile(s, acc, p->bias + channel, count, cols,
                                      run->out + (size_t)m0 * p->out_channels + channel,
                                      p->out_channels, channel, &p->rq);
                } else {
                    for (int r = 0; r < count; r++)
                        for (int c = 0; c < cols; c++)
                            run->sums[(size_t)(m0 + r) * p->out_channels + channel + c] =
                                acc[r * s.nr + c] + p->bias[channel + c];
                }
            }
        }
    }
}

static size_t aligned(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Requantized outputs into `out`, or (out NULL) the int32 sums into `sums`. Returns 0, or -1
 * when out of memory. */
static int conv_run(const tnn_q8_conv *p, const uint8_t *x, uint8_t *out, int32_t *sums,
                    const tnn_window *g) {
    ConvRun run = {p, x, out, sums, *g, 0, 0, 1, 0, 0, NULL, 0, 0, 0};
    const tnn_q8_shape s = p->shape;
    const int threads = tnn_get_threads();
    run.rows_bytes = aligned((size_t)s.mr * p->k);
    run.panel_bytes = aligned((size_t)s.mr * p->padded_k * s.a_bytes);
    run.scratch_bytes = run.rows_bytes + run.panel_bytes + aligned((size_t)s.mr * s.nr * 4);
    run.scratch = aligned_alloc(64, run.scratch_bytes * threads);
    if (!run.scratch) return -1;
    run.rows = (ptrdiff_t)g->batches * g->out_h * g->out_w;
    run.row_tiles = (run.rows + s.mr - 1) / s.mr;
    run.pointwise = p->kernel_h == 1 && p->kernel_w == 1 && g->stride_h == 1 &&
                    g->stride_w == 1 && g->pad_top == 0 && g->pad_left == 0 &&
                    g->out_h == g->height && g->out_w == g->width;
    const int blocks = (p->group_out + s.nr - 1) / s.nr;
    /* Few rows: also split the output channels, so that every thread has work. */
    int chunks = 1;
    if (run.row_tiles < 4 * threads && threads > 1)
        chunks = (int)TNN_MIN((ptrdiff_t)blocks, (4 * threads + run.row_tiles - 1) / run.row_tiles);
    run.blocks_per_chunk = (blocks + chunks - 1) / chunks;
    run.channel_chunks = (blocks + run.blocks_per_chunk - 1) / run.blocks_per_chunk;
    ptrdiff_t items = run.row_tiles * run.channel_chunks;
    ptrdiff_t work = (ptrdiff_t)s.mr * p->padded_k * s.nr * run.blocks_per_chunk * p->groups;
    tnn_parallel_for(items, tnn_grain(items, 1 + (1 << 16) / (work + 1), threads), threads,
                     conv_tiles, &run);
    free(run.scratch);
    return 0;
}

int tnn_q8_conv_run(const tnn_q8_conv *p, const uint8_t *x, uint8_t *out, const tnn_window *g) {
    return conv_run(p, x, out, NULL, g);
}

int tnn_q8_conv_sums(const tnn_q8_conv *p, const uint8_t *x, int32_t *sums, const tnn_window *g) {
    return conv_run(p, x, NULL, sums, g);
}

/* ------------------------------------------------------------------ depthwise */

struct tnn_q8_depthwise {
    int channels, multiplier, kernel_h, kernel_w; /* channels: output channels */
    int32_t *taps;   /* [kernel_h][kernel_w][channels] w - w_zero */
    int32_t *bias;
    int32_t input_zero;
    uint8_t flip; /* 0x80 for int8 data, as in tnn_q8_conv */
    int32_t *mult, *shift;
    tnn_requant rq;
};

void tnn_q8_depthwise_free(tnn_q8_depthwise *plan) {
    if (!plan) return;
    free(plan->taps);
    free(plan->bias);
    free(plan->mult);
    free(plan->shift);
    free(plan);
}

/* filter [1][kernel_h][kernel_w][channels], uint8 with w_zero or int8 (signed_filter);
 * signed_data as for tnn_q8_conv_create. */
tnn_q8_depthwise *tnn_q8_depthwise_create(const void *filter, int signed_filter, int w_zero,
                                          const int32_t *bias, int channels, int multiplier,
                                          int kernel_h, int kernel_w, int input_zero,
                                          const int32_t *mult, const int32_t *shift,
                                          int per_channel, int output_zero, int lo, int hi,
                                          int signed_data) {
    tnn_q8_depthwise *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    size_t taps = (size_t)kernel_h * kernel_w * channels;
    int n = per_channel ? channels : 1;
    p->taps = malloc(taps * sizeof *p->taps);
    p->bias = malloc((size_t)channels * sizeof *p->bias);
    p->mult = malloc((size_t)n * sizeof *p->mult);
    p->shift = malloc((size_t)n * sizeof *p->shift);
    if (!p->taps || !p->bias || !p->mult || !p->shift) {
        tnn_q8_depthwise_free(p);
        return NULL;
    }
    for (size_t i = 0; i < taps; i++)
        p->taps[i] = signed_filter ? ((const int8_t *)filter)[i]
                                   : ((const uint8_t *)filter)[i] - w_zero;
    memcpy(p->bias, bias, (size_t)channels * sizeof *p->bias);
    memcpy(p->mult, mult, (size_t)n * sizeof *p->mult);
    memcpy(p->shift, shift, (size_t)n * sizeof *p->shift);
    int any_left = 0;
    for (int c = 0; c < n; c++) any_left |= shift[c] > 0;
    p->channels = channels;
    p->multiplier = multiplier;
    p->kernel_h = kernel_h;
    p->kernel_w = kernel_w;
    p->input_zero = input_zero;
    p->flip = signed_data ? 0x80 : 0;
    p->rq = (tnn_requant){p->mult, p->shift, per_channel, any_left, output_zero, lo, hi, p->flip};
    return p;
}

int tnn_q8_depthwise_fits(const tnn_q8_depthwise *plan, const tnn_window *g) {
    int fits = g->kernel_h == plan->kernel_h && g->kernel_w == plan->kernel_w &&
               g->channels * plan->multiplier == plan->channels;
    return fits ? plan->channels : 0;
}

/* Sixteen bytes XORed with `flip` (int8 to uint8 + 128 with 0x80), widened to int32. */
static inline tnn_i32x16 load_flipped(const uint8_t *p, uint8_t flip) {
    int32_t wide[16];
    for (int i = 0; i < 16; i++) wide[i] = p[i] ^ flip;
    return tnn_load_i32x16(wide);
}

typedef struct {
    const tnn_q8_depthwise *p;
    const uint8_t *x;
    uint8_t *out;
    tnn_window g;
    int32_t *sums; /* per thread: one output row's sums */
} DepthwiseRun;

/* The common 3x3 filter, every row tap inside the image: for each run of 16 channels the 9
 * weight vectors stay in registers along the output row's inside columns [first, last). */
TNN_VECTOR_CLONES
static void depthwise_3x3_sums(const DepthwiseRun *run, const uint8_t *rows, int32_t *acc,
                               int first, int last) {
    const tnn_q8_depthwise *p = run->p;
    const tnn_window *g = &run->g;
    const int c = p->channels;
    const size_t row_stride = (size_t)g->width * c, col_stride = (size_t)g->stride_w * c;
    const int32_t zero = p->input_zero;
    const uint8_t flip = p->flip;
    for (int c0 = 0; c0 + 16 <= c; c0 += 16) {
        tnn_i32x16 w[9];
        for (int t = 0; t < 9; t++) w[t] = tnn_load_i32x16(p->taps + (size_t)t * c + c0);
        const tnn_i32x16 bias = tnn_load_i32x16(p->bias + c0);
        const uint8_t *x = rows + (size_t)(first * g->stride_w - g->pad_left) * c + c0;
        for (int ow = first; ow < last; ow++, x += col_stride) {
            tnn_i32x16 sum = bias;
            for (int i = 0; i < 3; i++) {
                const uint8_t *r = x + i * row_stride;
                sum += (load_flipped(r, flip) - zero) * w[3 * i];
                sum += (load_flipped(r + c, flip) - zero) * w[3 * i + 1];
                sum += (load_flipped(r + 2 * c, flip) - zero) * w[3 * i + 2];
            }
            tnn_store_i32x16(acc + (size_t)ow * c + c0, sum);
        }
    }
}

/* Sums one output row's taps into `acc` [out_w][channels] (bias included). Compilers
 * vectorize the channel loops. */
TNN_VECTOR_CLONES
static void depthwise_row_sums(const DepthwiseRun *run, ptrdiff_t row, int32_t *acc) {
    const tnn_q8_depthwise *p = run->p;
    const tnn_window *g = &run->g;
    const int channels = p->channels, in_channels = g->channels;
    const int32_t zero = p->input_zero;
    const uint8_t flip = p->flip;
    int b = (int)(row / g->out_h), oh = (int)(row % g->out_h);
    int i0, i1;
    int ih0 = tnn_window_taps(oh, g->stride_h, g->pad_top, g->dilation_h, p->kernel_h, g->height,
                              &i0, &i1);
    const uint8_t *image = run->x + (size_t)b * g->height * g->width * in_channels;
    /* Inside columns of a 3x3 window with every row inside: the unrolled path. */
    int skip_from = g->out_w, skip_to = g->out_w;
    if (p->multiplier == 1 && p->kernel_h == 3 && p->kernel_w == 3 && g->dilation_h == 1 &&
        g->dilation_w == 1 && i0 == 0 && i1 == 3 && channels % 16 == 0) {
        int first = (g->pad_left + g->stride_w - 1) / g->stride_w;
        int last = TNN_MIN(g->out_w, (g->width - 3 + g->pad_left) / g->stride_w + 1);
        if (first < last) {
            depthwise_3x3_sums(run, image + (size_t)ih0 * g->width * in_channels, acc, first,
                               last);
            skip_from = first;
            skip_to = last;
        }
    }
    for (int ow = 0; ow < g->out_w; ow++) {
        if (ow == skip_from) ow = skip_to;
        if (ow >= g->out_w) break;
        int j0, j1;
        int iw0 = tnn_window_taps(ow, g->stride_w, g->pad_left, g->dilation_w, p->kernel_w,
                                  g->width, &j0, &j1);
        int32_t *sum = acc + (size_t)ow * channels;
        int c0 = 0;
        if (p->multiplier == 1) {
            /* Runs of 16 channels held in a local array across all taps (in registers). */
            for (; c0 + 16 <= channels; c0 += 16) {
                tnn_i32x16 s = tnn_load_i32x16(p->bias + c0);
                for (int i = i0; i < i1; i++) {
                    const uint8_t *in_row =
                        image + (size_t)(ih0 + i * g->dilation_h) * g->width * in_channels + c0;
                    const int32_t *w_row = p->taps + (size_t)i * p->kernel_w * channels + c0;
                    for (int j = j0; j < j1; j++)
                        s += (load_flipped(in_row + (size_t)(iw0 + j * g->dilation_w) *
                                                        in_channels, flip) - zero) *
                             tnn_load_i32x16(w_row + (size_t)j * channels);
                }
                tnn_store_i32x16(sum + c0, s);
            }
        }
        for (int c = c0; c < channels; c++) {
            int32_t s = p->bias[c];
            for (int i = i0; i < i1; i++) {
                const uint8_t *in_row =
                    image + (size_t)(ih0 + i * g->dilation_h) * g->width * in_channels;
                for (int j = j0; j < j1; j++) {
                    int32_t w = p->taps[((size_t)i * p->kernel_w + j) * channels + c];
                    int32_t x = in_row[(size_t)(iw0 + j * g->dilation_w) * in_channels +
                                       c / p->multiplier] ^ flip;
                    s += (x - zero) * w;
                }
            }
            sum[c] = s;
        }
    }
}

static void depthwise_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const DepthwiseRun *run = arg;
    const tnn_q8_depthwise *p = run->p;
    const ptrdiff_t width = (ptrdiff_t)run->g.out_w * p->channels;
    int32_t *acc = run->sums + (size_t)thread * width;
    for (ptrdiff_t row = start; row < stop; row++) {
        depthwise_row_sums(run, row, acc);
        uint8_t *out = run->out + (size_t)row * width;
        if (p->rq.per_channel) {
            for (int ow = 0; ow < run->g.out_w; ow++)
                tnn_requantize_row(acc + (size_t)ow * p->channels, out + (size_t)ow * p->channels,
                                   p->channels, 0, &p->rq);
        } else {
            tnn_requantize_row(acc, out, width, 0, &p->rq);
        }
    }
}

/* Returns 0, or -1 when out of memory. */
int tnn_q8_depthwise_run(const tnn_q8_depthwise *p, const uint8_t *x, uint8_t *out,
                         const tnn_window *g) {
    const int threads = tnn_get_threads();
    DepthwiseRun run = {p, x, out, *g, NULL};
    run.sums = malloc((size_t)threads * g->out_w * p->channels * sizeof *run.sums);
    if (!run.sums) return -1;
    ptrdiff_t rows = (ptrdiff_t)g->batches * g->out_h;
    ptrdiff_t per_row = (ptrdiff_t)g->out_w * p->channels * p->kernel_h * p->kernel_w;
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 15) / (per_row + 1), threads), threads,
                     depthwise_rows, &run);
    free(run.sums);
    return 0;
}
