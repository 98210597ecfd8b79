/* One time step of NNAPI's LSTM and RNN cells in float32 (runtime/native/recurrent.py).
 *
 * An unrolled recurrent layer is one such operation per time step on a few dozen values, so
 * the reference's NumPy arithmetic (tens of small arrays per step) is most of a converted
 * model's time; here a step is one pass over the weights (split over the kernels' threads
 * when it is large) and one over the gates. The equations and the scratch buffer's layout
 * are the reference's (runtime/ops/_recurrent.py); sums are taken in another order and
 * sigmoid and tanh are computed sixteen lanes at a time (below), so results agree within
 * float32 rounding. Products with weights a row has none of for a gate (all zero) are
 * skipped, so an infinite input does not make those sums NaN, as 0 * inf would in the
 * reference. */

#include "kernels.h"

#include <math.h>
#include <stdlib.h>

/* TFLite's activation codes (NNAPI's fuse codes are the first four). */
enum { ACT_NONE = 0, ACT_RELU = 1, ACT_RELU1 = 2, ACT_RELU6 = 3, ACT_TANH = 4, ACT_SIGMOID = 6 };

static float clamp(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------ sigmoid and tanh
 *
 * Sixteen lanes at a time (a step's gates are a few dozen values: the C library's expf and
 * tanhf, one value per call, were a third of a small step's time). Both are within about one
 * float32 ulp of the exact function, as NumPy's and the C library's are. */

TNN_VECTOR_INLINE tnn_f32x16 select_f32x16(tnn_i32x16 mask, tnn_f32x16 a, tnn_f32x16 b) {
    return (tnn_f32x16)(((tnn_i32x16)a & mask) | ((tnn_i32x16)b & ~mask));
}

/* e^v: 2^n e^r with n = round(v / ln 2) and |r| <= ln 2 / 2, e^r by its Taylor polynomial to
 * r^7 (truncation below 1e-8 relative); 2^n applied in two halves so that results near
 * float32's limits (denormals included) come out right. Beyond them: inf or 0; NaN stays. */
TNN_VECTOR_INLINE tnn_f32x16 exp_f32x16(tnn_f32x16 v) {
    tnn_f32x16 x = tnn_clamp_f32x16(v, -104.0f, 89.0f);
    tnn_f32x16 t = x * 1.44269504f + 0.5f;
    tnn_i32x16 n = __builtin_convertvector(t, tnn_i32x16); /* toward zero, then down */
    n -= (tnn_i32x16)(__builtin_convertvector(n, tnn_f32x16) > t) & 1;
    tnn_f32x16 nf = __builtin_convertvector(n, tnn_f32x16);
    tnn_f32x16 r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    tnn_f32x16 p = r * (1.0f / 5040) + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    tnn_i32x16 half = n >> 1, rest = n - half;
    p = p * (tnn_f32x16)((half + 127) << 23);
    p = p * (tnn_f32x16)((rest + 127) << 23);
    const tnn_f32x16 zero = {0};
    p = select_f32x16(v > 88.7228394f, zero + __builtin_inff(), p);
    p = select_f32x16(v < -103.972084f, zero, p);
    return select_f32x16(v != v, v, p);
}

TNN_VECTOR_INLINE tnn_f32x16 sigmoid_f32x16(tnn_f32x16 v) {
    return 1.0f / (1.0f + exp_f32x16(-v));
}

/* tanh: below 0.55 in magnitude x + x^3 P(x^2), P fitted (least squares on the relative
 * error) to within 0.75 ulp; above, (1 - e) / (1 + e) with e = exp(-2|x|), sign restored. */
TNN_VECTOR_INLINE tnn_f32x16 tanh_f32x16(tnn_f32x16 v) {
    const tnn_i32x16 sign = (tnn_i32x16){0} | INT32_MIN;
    tnn_f32x16 a = (tnn_f32x16)((tnn_i32x16)v & ~sign);
    tnn_f32x16 e = exp_f32x16(-2.0f * a);
    tnn_f32x16 large = (1.0f - e) / (1.0f + e);
    large = (tnn_f32x16)((tnn_i32x16)large | ((tnn_i32x16)v & sign));
    tnn_f32x16 z = v * v;
    tnn_f32x16 p = z * -6.287650671e-03f + 2.108205110e-02f;
    p = p * z + -5.385511741e-02f;
    p = p * z + 1.333261728e-01f;
    p = p * z + -3.333331943e-01f;
    tnn_f32x16 small = v + v * z * p;
    return select_f32x16(a < 0.55f, small, large);
}

/* f over v[0..n), sixteen at a time (the last lanes through a padded copy). */
#define OVER_ARRAY(name, f)                                                                   \
    TNN_VECTOR_CLONES static void name(float *v, ptrdiff_t n) {                             \
        ptrdiff_t i = 0;                                                                      \
        for (; i + 16 <= n; i += 16) tnn_store_f32x16(v + i, f(tnn_load_f32x16(v + i)));     \
        if (i < n) {                                                                          \
            float tail[16] = {0};                                                             \
            for (ptrdiff_t j = i; j < n; j++) tail[j - i] = v[j];                             \
            tnn_store_f32x16(tail, f(tnn_load_f32x16(tail)));                                 \
            for (ptrdiff_t j = i; j < n; j++) v[j] = tail[j - i];                             \
        }                                                                                     \
    }
OVER_ARRAY(sigmoid_n, sigmoid_f32x16)
OVER_ARRAY(tanh_n, tanh_f32x16)

/* An activation (TFLite's code) over v[0..n) in place. */
static void activate_n(int code, float *v, ptrdiff_t n) {
    switch (code) {
    case ACT_RELU:
        for (ptrdiff_t j = 0; j < n; j++) v[j] = v[j] < 0.0f ? 0.0f : v[j];
        break;
    case ACT_RELU1:
        for (ptrdiff_t j = 0; j < n; j++) v[j] = clamp(v[j], -1.0f, 1.0f);
        break;
    case ACT_RELU6:
        for (ptrdiff_t j = 0; j < n; j++) v[j] = clamp(v[j], 0.0f, 6.0f);
        break;
    case ACT_TANH: tanh_n(v, n); break;
    case ACT_SIGMOID: sigmoid_n(v, n); break;
    default: break;
    }
}

/* y[0..n) += a[0] w[0][0..n) + ... + a[3] w[3][0..n), rows `stride` apart, summed in that
 * order: four rows per pass over y, which a one-row loop would read and write four times. */
TNN_VECTOR_CLONES
static void axpy4(ptrdiff_t n, const float *a, const float *w, ptrdiff_t stride, float *y) {
    const float a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    for (ptrdiff_t j = 0; j < n; j++)
        y[j] = y[j] + a0 * w0[j] + a1 * w1[j] + a2 * w2[j] + a3 * w3[j];
}

TNN_VECTOR_CLONES
static void axpy(ptrdiff_t n, float a, const float *x, float *y) {
    for (ptrdiff_t j = 0; j < n; j++) y[j] += a * x[j];
}

/* out[0..n) += sum over i < k of a[i] * w[i][0..n): a vector times a transposed weight matrix,
 * the inner loop along contiguous rows so that it vectorizes without reassociation. */
static void accumulate(ptrdiff_t k, ptrdiff_t n, const float *a, const float *w, float *out) {
    ptrdiff_t i = 0;
    for (; i + 4 <= k; i += 4) axpy4(n, a + i, w + i * n, n, out);
    for (; i < k; i++) axpy(n, a[i], w + i * n, out);
}

/* bias + x W' + h R' for one batch row, the weights given as [input + state][n]. */
static void gate_sums(ptrdiff_t inputs, ptrdiff_t states, ptrdiff_t n, const float *x,
                      const float *h, const float *weights, const float *bias, float *out) {
    for (ptrdiff_t j = 0; j < n; j++) out[j] = bias ? bias[j] : 0.0f;
    accumulate(inputs, n, x, weights, out);
    accumulate(states, n, h, weights + inputs * n, out);
}

/* The gate sums bias + x W' + h R' of every batch row, in blocks of at most BLOCK columns
 * that never cross a gate, split over the kernels' threads when there is enough work. A
 * weight row's products with a gate it has no non-zero weight for are skipped; four rows
 * feeding the block's gate go in one pass. */
#define BLOCK 256

typedef struct {
    const tnn_lstm_cell *cell;
    const float *x, *h;
    float *sums;                       /* [batch][gates * cells] */
    ptrdiff_t blocks_per_gate, blocks; /* per batch row */
} GateSums;

static void sum_rows(ptrdiff_t k, const unsigned char *row_gates, int gate, const float *a,
                     const float *w, ptrdiff_t stride, ptrdiff_t length, float *out) {
    ptrdiff_t i = 0;
    while (i < k) {
        if (!(row_gates[i] >> gate & 1)) {
            i++;
        } else if (i + 4 <= k &&
                   (row_gates[i + 1] & row_gates[i + 2] & row_gates[i + 3]) >> gate & 1) {
            axpy4(length, a + i, w + i * stride, stride, out);
            i += 4;
        } else {
            axpy(length, a[i], w + i * stride, out);
            i++;
        }
    }
}

static void gate_sum_blocks(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    const GateSums *p = arg;
    const tnn_lstm_cell *cell = p->cell;
    const ptrdiff_t cells = cell->cells, width = (ptrdiff_t)cell->gates * cells;
    (void)thread;
    for (ptrdiff_t item = start; item < stop; item++) {
        ptrdiff_t b = item / p->blocks, block = item % p->blocks;
        int gate = (int)(block / p->blocks_per_gate);
        ptrdiff_t offset = block % p->blocks_per_gate * BLOCK;
        ptrdiff_t column = gate * cells + offset, length = TNN_MIN(BLOCK, cells - offset);
        float *out = p->sums + b * width + column;
        for (ptrdiff_t j = 0; j < length; j++)
            out[j] = cell->layer_norm ? 0.0f : cell->bias[column + j];
        sum_rows(cell->input_size, cell->row_gates, gate, p->x + b * cell->input_size,
                 cell->weights + column, width, length, out);
        sum_rows(cell->output_size, cell->row_gates + cell->input_size, gate,
                 p->h + b * cell->output_size, cell->weights + cell->input_size * width + column,
                 width, length, out);
    }
}

static void gate_sums_all(const tnn_lstm_cell *cell, ptrdiff_t batch, const float *x,
                          const float *h, float *sums) {
    GateSums p = {.cell = cell, .x = x, .h = h, .sums = sums,
                  .blocks_per_gate = (cell->cells + BLOCK - 1) / BLOCK};
    p.blocks = p.blocks_per_gate * cell->gates;
    ptrdiff_t items = batch * p.blocks;
    ptrdiff_t per_item = (cell->input_size + cell->output_size) * TNN_MIN(BLOCK, cell->cells);
    int threads = tnn_get_threads();
    tnn_parallel_for(items, tnn_grain(items, 1 + (1 << 16) / (per_item + 1), threads), threads,
                     gate_sum_blocks, &p);
}

void tnn_lstm_row_gates(const float *weights, ptrdiff_t rows, int gates, ptrdiff_t cells,
                        unsigned char *row_gates) {
    for (ptrdiff_t i = 0; i < rows; i++) {
        unsigned found = 0;
        for (int g = 0; g < gates; g++)
            for (ptrdiff_t j = 0; j < cells; j++)
                if (weights[(i * gates + g) * cells + j] != 0.0f) {
                    found |= 1u << g;
                    break;
                }
        row_gates[i] = (unsigned char)found;
    }
}

/* Zero mean and unit variance along the cells (the reference's _normalize: variance as
 * E[x^2] - E[x]^2, epsilon for a variance not above zero), then weight and bias. */
static void layer_normalize(float *v, ptrdiff_t cells, const float *weight, const float *bias) {
    double sum = 0.0, squares = 0.0;
    for (ptrdiff_t j = 0; j < cells; j++) {
        sum += v[j];
        squares += (double)(v[j] * v[j]);
    }
    float mean = (float)(sum / (double)cells);
    float variance = (float)(squares / (double)cells) - mean * mean;
    if (!(variance > 0.0f)) variance = TNN_LSTM_LAYER_NORM_EPSILON;
    float deviation = sqrtf(variance);
    for (ptrdiff_t j = 0; j < cells; j++) v[j] = (v[j] - mean) / deviation * weight[j] + bias[j];
}

/* One gate's pre-activation in place: peephole term, then layer normalization (which adds the
 * bias after it; without, the bias is already in the sums). */
static void finish_gate(const tnn_lstm_cell *cell, int gate, float *v, const float *peephole,
                        const float *state) {
    ptrdiff_t cells = cell->cells;
    if (peephole)
        for (ptrdiff_t j = 0; j < cells; j++) v[j] = v[j] + peephole[j] * state[j];
    if (cell->layer_norm)
        layer_normalize(v, cells, cell->layer_norm + gate * cells, cell->bias + gate * cells);
}

int tnn_lstm_step_f32(const tnn_lstm_cell *cell, ptrdiff_t batch, const float *x,
                      const float *h_in, const float *c_in, float *scratch, float *h_out,
                      float *c_out) {
    const ptrdiff_t cells = cell->cells, width = (ptrdiff_t)cell->gates * cells;
    float *all_sums = malloc((size_t)(batch * width > 0 ? batch * width : 1) * sizeof *all_sums);
    if (!all_sums) return -1;
    gate_sums_all(cell, batch, x, h_in, all_sums);
    const int cifg = cell->gates == 3;
    /* Gate blocks in the stacked weights: input (absent with CIFG), forget, cell, output. */
    const int g_forget = cifg ? 0 : 1, g_cell = g_forget + 1, g_output = g_forget + 2;
    /* Scratch blocks, each [batch][cells]: input gate (absent with CIFG), cell activation,
     * forget gate (1 - forget with CIFG), gated output. */
    const int s_activation = cifg ? 0 : 1;
    const float *peep = cell->peephole; /* [3][cells]: input, forget, output */
    for (ptrdiff_t b = 0; b < batch; b++) {
        const float *c_prev = c_in + b * cells;
        float *c = c_out + b * cells;
        float *sums = all_sums + b * width;
        float *forget = sums + g_forget * cells, *candidate = sums + g_cell * cells;
        float *output = sums + g_output * cells, *input = cifg ? NULL : sums;
        finish_gate(cell, g_forget, forget, peep ? peep + cells : NULL, c_prev);
        finish_gate(cell, g_cell, candidate, NULL, NULL);
        if (input) finish_gate(cell, 0, input, peep, c_prev);
        float *s_input = scratch + b * cells;
        float *s_act = scratch + ((ptrdiff_t)s_activation * batch + b) * cells;
        float *s_forget = scratch + ((ptrdiff_t)(s_activation + 1) * batch + b) * cells;
        float *s_hidden = scratch + ((ptrdiff_t)(s_activation + 2) * batch + b) * cells;
        sigmoid_n(forget, cells);
        if (input) sigmoid_n(input, cells);
        activate_n(cell->activation, candidate, cells);
        for (ptrdiff_t j = 0; j < cells; j++) {
            float f = forget[j];
            float in = cifg ? 1.0f - f : input[j];
            float state = f * c_prev[j] + in * candidate[j];
            c[j] = cell->cell_clip > 0.0f ? clamp(state, -cell->cell_clip, cell->cell_clip)
                                          : state;
            if (!cifg) s_input[j] = in;
            s_forget[j] = cifg ? in : f;
            s_act[j] = c[j];
        }
        finish_gate(cell, g_output, output, peep ? peep + 2 * cells : NULL, c);
        sigmoid_n(output, cells);
        activate_n(cell->activation, s_act, cells);
        for (ptrdiff_t j = 0; j < cells; j++) s_hidden[j] = output[j] * s_act[j];
        float *out = h_out + b * cell->output_size;
        if (!cell->projection) {
            for (ptrdiff_t j = 0; j < cells; j++) out[j] = s_hidden[j];
            continue;
        }
        for (ptrdiff_t m = 0; m < cell->output_size; m++)
            out[m] = cell->projection_bias ? cell->projection_bias[m] : 0.0f;
        accumulate(cells, cell->output_size, s_hidden, cell->projection, out);
        if (cell->proj_clip > 0.0f)
            for (ptrdiff_t m = 0; m < cell->output_size; m++)
                out[m] = clamp(out[m], -cell->proj_clip, cell->proj_clip);
    }
    free(all_sums);
    return 0;
}

void tnn_rnn_step_f32(ptrdiff_t batch, ptrdiff_t inputs, ptrdiff_t units, const float *x,
                      const float *h_in, const float *weights, const float *bias,
                      int activation, float *h_out) {
    for (ptrdiff_t b = 0; b < batch; b++) {
        float *out = h_out + b * units;
        gate_sums(inputs, units, units, x + b * inputs, h_in + b * units, weights, bias, out);
        activate_n(activation, out, units);
    }
}
