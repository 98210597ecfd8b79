/* SOFTMAX along one axis of a tensor seen as [outer][n][inner] (the axis in the middle).
 *
 * Float: exp((x - max) * beta) summed in double and divided by the sum. Quantized (the
 * reference's fixed-point algorithm, runtime/ops/normalization.py): the exponential of each
 * difference from the row maximum (256 possible differences) comes from tables the caller
 * computes with the reference's own functions; this file sums them per row (wrapping at 32
 * bits as C++ does) and, given each row's fixed-point reciprocal of the sum, scales them. */

#include "kernels.h"
#include "vecmath.h"

#include <math.h>

typedef struct {
    const void *x;
    void *out;
    ptrdiff_t n, inner;
    float beta;
    const int32_t *table; /* quantized: terms (pass 1) or exponentials (pass 2) by -difference */
    int32_t diff_min;
    int32_t *sums;                        /* pass 1 output, per row */
    const int32_t *reciprocal, *exponent; /* pass 2 input, per row */
} Softmax;

/* exp of 16 values at once for x <= 0 (softmax's shifted inputs): Cody-Waite reduction by
 * ln 2 and Cephes' degree-6 polynomial, within 2 ulp of expf; below -87.3 (where expf's
 * results are denormal, under 1e-38) it gives 0. */
TNN_VECTOR_INLINE tnn_f32x16 exp_nonpositive(tnn_f32x16 x) {
    const tnn_i32x16 tiny = x < -87.3f;
    x = (tnn_f32x16)(((tnn_i32x16)x & ~tiny) | ((tnn_i32x16)(x - x) & tiny)); /* 0 there */
    tnn_f32x16 t = x * 1.44269504088896341f - 0.5f; /* x / ln 2, rounded below by -0.5 */
    tnn_i32x16 n = __builtin_convertvector(t, tnn_i32x16); /* toward zero: t <= 0 ... */
    tnn_f32x16 nf = __builtin_convertvector(n, tnn_f32x16);
    n += nf > t; /* ... so floor(t) = trunc(t) - 1 where trunc(t) > t (true is -1) */
    nf = __builtin_convertvector(n, tnn_f32x16) + 1.0f; /* round(x / ln 2) */
    n += 1;
    tnn_f32x16 y = tnn_exp_reduced_f32x16(x, nf);
    tnn_f32x16 scale = (tnn_f32x16)((n + 127) << 23);
    return (tnn_f32x16)((tnn_i32x16)(y * scale) & ~tiny);
}

/* Row r = (o, i): elements x[(o * n + k) * inner + i], k < n. */
#define ROW_BASE(p, r) (((r) / (p)->inner) * (p)->n * (p)->inner + (r) % (p)->inner)

typedef double tnn_f64x8 __attribute__((vector_size(64)));

/* The maximum of a contiguous row, NaN when a value is NaN, sixteen lanes at a time. */
TNN_VECTOR_INLINE float contiguous_max(const float *x, ptrdiff_t n) {
    ptrdiff_t k = 0;
    float max = x[0];
    int nan = 0;
    if (n >= 16) {
        tnn_f32x16 best = tnn_load_f32x16(x);
        tnn_i32x16 unordered = best != best;
        for (k = 16; k + 16 <= n; k += 16) {
            tnn_f32x16 v = tnn_load_f32x16(x + k);
            unordered |= v != v;
            best = tnn_select_f32x16(v > best, v, best);
        }
        max = best[0];
        for (int i = 0; i < 16; i++) {
            max = best[i] > max ? best[i] : max;
            nan |= unordered[i];
        }
    }
    for (; k < n; k++) {
        max = x[k] > max ? x[k] : max;
        nan |= x[k] != x[k];
    }
    return nan ? __builtin_nanf("") : max;
}

/* A contiguous row whose maximum is finite: its exponentials stored sixteen at a time, each
 * added in double (eight lanes per half, as exact as the scalar sum), then every one divided
 * by the total (IEEE division: the same results as one at a time). beta is positive
 * (NNAPI requires it), so the padding's -infinity stays below -87.3. */
TNN_VECTOR_INLINE void contiguous_row(const float *x, float *out, ptrdiff_t n, float max,
                                      float beta) {
    tnn_f64x8 lanes = {0};
    ptrdiff_t k = 0;
    for (; k + 16 <= n; k += 16) {
        tnn_f32x16 e = exp_nonpositive((tnn_load_f32x16(x + k) - max) * beta);
        tnn_store_f32x16(out + k, e);
        lanes += __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3, 4, 5, 6, 7),
                                         tnn_f64x8);
        lanes += __builtin_convertvector(
            __builtin_shufflevector(e, e, 8, 9, 10, 11, 12, 13, 14, 15), tnn_f64x8);
    }
    double sum = 0;
    for (int i = 0; i < 8; i++) sum += lanes[i];
    if (k < n) { /* the last partial group, padded with -infinity (exponentials of 0) */
        float tail[16];
        for (int i = 0; i < 16; i++) tail[i] = k + i < n ? x[k + i] : -INFINITY;
        tnn_f32x16 e = exp_nonpositive((tnn_load_f32x16(tail) - max) * beta);
        for (int i = 0; k + i < n; i++) {
            out[k + i] = e[i];
            sum += e[i];
        }
    }
    const float total = (float)sum;
    k = 0;
    for (; k + 16 <= n; k += 16) tnn_store_f32x16(out + k, tnn_load_f32x16(out + k) / total);
    for (; k < n; k++) out[k] = out[k] / total;
}

TNN_VECTOR_CLONES
static void softmax_f32_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Softmax *p = arg;
    const ptrdiff_t n = p->n, step = p->inner;
    for (ptrdiff_t r = start; r < stop; r++) {
        const float *x = (const float *)p->x + ROW_BASE(p, r);
        float *out = (float *)p->out + ROW_BASE(p, r);
        if (step == 1) {
            const float max = contiguous_max(x, n);
            if (max > -INFINITY && max < INFINITY) { /* finite: not NaN either */
                contiguous_row(x, out, n, max, p->beta);
                continue;
            }
        }
        float max = x[0];
        for (ptrdiff_t k = 1; k < n; k++)
            if (x[k * step] > max || x[k * step] != x[k * step]) max = x[k * step];
        double sum = 0;
        for (ptrdiff_t k = 0; k < n; k++) {
            float e = expf((x[k * step] - max) * p->beta);
            out[k * step] = e;
            sum += e;
        }
        const float total = (float)sum;
        for (ptrdiff_t k = 0; k < n; k++) out[k * step] = out[k * step] / total;
    }
}

static void softmax_q8_sum_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Softmax *p = arg;
    const ptrdiff_t n = p->n, step = p->inner;
    for (ptrdiff_t r = start; r < stop; r++) {
        const uint8_t *x = (const uint8_t *)p->x + ROW_BASE(p, r);
        int max = 0;
        for (ptrdiff_t k = 0; k < n; k++) max = x[k * step] > max ? x[k * step] : max;
        uint32_t sum = 0; /* wraps at 32 bits, as the reference's C++ int32 sum */
        for (ptrdiff_t k = 0; k < n; k++) sum += (uint32_t)p->table[max - x[k * step]];
        p->sums[r] = (int32_t)sum;
    }
}

static void softmax_q8_out_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Softmax *p = arg;
    const ptrdiff_t n = p->n, step = p->inner;
    for (ptrdiff_t r = start; r < stop; r++) {
        const uint8_t *x = (const uint8_t *)p->x + ROW_BASE(p, r);
        uint8_t *out = (uint8_t *)p->out + ROW_BASE(p, r);
        int max = 0;
        for (ptrdiff_t k = 0; k < n; k++) max = x[k * step] > max ? x[k * step] : max;
        const int32_t reciprocal = p->reciprocal[r];
        const int exponent = p->exponent[r];
        for (ptrdiff_t k = 0; k < n; k++) {
            int diff = x[k * step] - max;
            int64_t v = 0;
            if (diff >= p->diff_min)
                v = tnn_rdpot64(tnn_srdhm(reciprocal, p->table[-diff]), exponent);
            out[k * step] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

static void rows(const Softmax *p, ptrdiff_t outer, tnn_task fn) {
    ptrdiff_t count = outer * p->inner;
    int threads = tnn_get_threads();
    tnn_parallel_for(count, tnn_grain(count, 1 + (1 << 14) / (p->n + 1), threads), threads, fn,
                     (void *)p);
}

void tnn_softmax_f32(const float *x, float *out, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                     float beta) {
    Softmax p = {x, out, n, inner, beta, NULL, 0, NULL, NULL, NULL};
    rows(&p, outer, softmax_f32_rows);
}

void tnn_softmax_q8_sums(const uint8_t *x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                         const int32_t terms[256], int32_t *sums) {
    Softmax p = {x, NULL, n, inner, 0, terms, 0, sums, NULL, NULL};
    rows(&p, outer, softmax_q8_sum_rows);
}

void tnn_softmax_q8_scale(const uint8_t *x, uint8_t *out, ptrdiff_t outer, ptrdiff_t n,
                          ptrdiff_t inner, const int32_t exps[256], int32_t diff_min,
                          const int32_t *reciprocal, const int32_t *exponent) {
    Softmax p = {x, out, n, inner, 0, exps, diff_min, NULL, reciprocal, exponent};
    rows(&p, outer, softmax_q8_out_rows);
}
