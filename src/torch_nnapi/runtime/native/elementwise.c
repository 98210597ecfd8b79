/* Element-wise kernels: ADD, SUB, MUL and DIV with broadcasting and a fused activation (float32
 * and 8-bit quantized), clamps, QUANTIZE, and table lookups (any uint8 -> uint8 or float32
 * function of one element, its table computed by the reference kernel).
 *
 * Broadcasting: the caller gives the output shape padded to 4 dimensions and each input's
 * element strides (0 along broadcast dimensions); the innermost stride of each input is 0 or 1.
 * Rows of the innermost dimension are split over the pool. Float arithmetic is IEEE float32
 * without contraction, exactly as NumPy computes it. */

#include "kernels.h"

#include <math.h>
#if TNN_X86
#include <immintrin.h>
#endif
#include <string.h>

#define BLOCK 256

static void row_origin(const tnn_broadcast *b, ptrdiff_t row, ptrdiff_t *a_at, ptrdiff_t *b_at) {
    ptrdiff_t i2 = row % b->shape[2], rest = row / b->shape[2];
    ptrdiff_t i1 = rest % b->shape[1], i0 = rest / b->shape[1];
    *a_at = i0 * b->a_strides[0] + i1 * b->a_strides[1] + i2 * b->a_strides[2];
    *b_at = i0 * b->b_strides[0] + i1 * b->b_strides[1] + i2 * b->b_strides[2];
}

static ptrdiff_t row_count(const tnn_broadcast *b) {
    return (ptrdiff_t)b->shape[0] * b->shape[1] * b->shape[2];
}

/* ------------------------------------------------------------------ float */

typedef struct {
    tnn_broadcast b;
    int op;
    const float *x, *y;
    float *out;
    float lo, hi;
} BinaryF32;

#define FLOAT_LOOP(expr)                                                                      \
    do {                                                                                      \
        if (sa && sb)                                                                         \
            for (ptrdiff_t i = 0; i < n; i++) { float a = x[i], b = y[i]; o[i] = (expr); }   \
        else if (sa)                                                                          \
            for (ptrdiff_t i = 0; i < n; i++) { float a = x[i], b = y[0]; o[i] = (expr); }   \
        else if (sb)                                                                          \
            for (ptrdiff_t i = 0; i < n; i++) { float a = x[0], b = y[i]; o[i] = (expr); }   \
        else                                                                                  \
            for (ptrdiff_t i = 0; i < n; i++) { float a = x[0], b = y[0]; o[i] = (expr); }   \
    } while (0)

TNN_VECTOR_CLONES
static void binary_f32_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const BinaryF32 *p = arg;
    const ptrdiff_t n = p->b.shape[3];
    const int sa = p->b.a_strides[3] != 0, sb = p->b.b_strides[3] != 0;
    const float lo = p->lo, hi = p->hi;
    for (ptrdiff_t row = start; row < stop; row++) {
        ptrdiff_t a_at, b_at;
        row_origin(&p->b, row, &a_at, &b_at);
        const float *x = p->x + a_at, *y = p->y + b_at;
        float *o = p->out + row * n;
        switch (p->op) {
        case TNN_ADD: FLOAT_LOOP(a + b); break;
        case TNN_SUB: FLOAT_LOOP(a - b); break;
        case TNN_MUL: FLOAT_LOOP(a * b); break;
        default: FLOAT_LOOP(a / b); break;
        }
        if (lo > -INFINITY || hi < INFINITY)
            for (ptrdiff_t i = 0; i < n; i++) {
                float v = o[i] < lo ? lo : o[i];
                o[i] = v > hi ? hi : v;
            }
    }
}

void tnn_binary_f32(int op, const float *x, const float *y, float *out, const tnn_broadcast *b,
                    float lo, float hi) {
    BinaryF32 p = {*b, op, x, y, out, lo, hi};
    ptrdiff_t rows = row_count(b);
    int threads = tnn_get_threads();
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 15) / (b->shape[3] + 1), threads), threads,
                     binary_f32_rows, &p);
}

/* ------------------------------------------------------------------ quantized */

typedef struct {
    tnn_broadcast b;
    const uint8_t *x, *y;
    uint8_t *out;
    tnn_q8_binary q;
} BinaryQ8;

/* n values of a row (stride 1, or 0: one value repeated), XORed with flip (int8: 128 up),
 * minus the zero point, times 2^shift. */
static void widen(const uint8_t *v, int contiguous, uint8_t flip, int32_t zero, int shift,
                  int32_t *out, ptrdiff_t n) {
    if (contiguous)
        for (ptrdiff_t i = 0; i < n; i++) out[i] = ((int32_t)(v[i] ^ flip) - zero) * (1 << shift);
    else
        for (ptrdiff_t i = 0; i < n; i++) out[i] = ((int32_t)(v[0] ^ flip) - zero) * (1 << shift);
}

static void binary_q8_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const BinaryQ8 *p = arg;
    const tnn_q8_binary *q = &p->q;
    const ptrdiff_t n = p->b.shape[3];
    const int sa = p->b.a_strides[3] != 0, sb = p->b.b_strides[3] != 0;
    const tnn_requant rq = {&q->out_multiplier, &q->out_shift, 0, q->out_shift > 0,
                            q->out_zero, q->lo, q->hi, q->flip};
    int32_t a[BLOCK], b[BLOCK];
    for (ptrdiff_t row = start; row < stop; row++) {
        ptrdiff_t a_at, b_at;
        row_origin(&p->b, row, &a_at, &b_at);
        for (ptrdiff_t i0 = 0; i0 < n; i0 += BLOCK) {
            ptrdiff_t m = TNN_MIN((ptrdiff_t)BLOCK, n - i0);
            const uint8_t *x = p->x + a_at + (sa ? i0 : 0), *y = p->y + b_at + (sb ? i0 : 0);
            if (q->op == TNN_MUL) {
                widen(x, sa, q->flip, q->x_zero, 0, a, m);
                widen(y, sb, q->flip, q->y_zero, 0, b, m);
                for (ptrdiff_t i = 0; i < m; i++) a[i] *= b[i];
            } else {
                widen(x, sa, q->flip, q->x_zero, q->left_shift, a, m);
                widen(y, sb, q->flip, q->y_zero, q->left_shift, b, m);
                tnn_mbqm_row(a, a, m, q->x_multiplier, q->x_shift);
                tnn_mbqm_row(b, b, m, q->y_multiplier, q->y_shift);
                for (ptrdiff_t i = 0; i < m; i++) a[i] += b[i];
            }
            tnn_requantize_row(a, p->out + row * n + i0, m, 0, &rq);
        }
    }
}

void tnn_binary_q8(const uint8_t *x, const uint8_t *y, uint8_t *out, const tnn_broadcast *b,
                   const tnn_q8_binary *q) {
    BinaryQ8 p = {*b, x, y, out, *q};
    ptrdiff_t rows = row_count(b);
    int threads = tnn_get_threads();
    tnn_parallel_for(rows, tnn_grain(rows, 1 + (1 << 14) / (b->shape[3] + 1), threads), threads,
                     binary_q8_rows, &p);
}

/* ------------------------------------------------------------------ one element at a time */

typedef struct {
    const void *in;
    void *out;
    const void *table;
    float scale, lo, hi;
    int32_t zero;
} Map;

static void lut_u8_range(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Map *p = arg;
    const uint8_t *in = p->in, *table = p->table;
    uint8_t *out = p->out;
    for (ptrdiff_t i = start; i < stop; i++) out[i] = table[in[i]];
}

static void lut_f32_range(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Map *p = arg;
    const uint8_t *in = p->in;
    const float *table = p->table;
    float *out = p->out;
    for (ptrdiff_t i = start; i < stop; i++) out[i] = table[in[i]];
}

/* One value: x / scale rounded half away from zero, plus the zero point, saturated; NaN
 * gives 255. */
static inline uint8_t quantize_one(float x, float scale, float zero) {
    float v = roundf(x / scale) + zero;
    return v >= 255.0f || v != v ? 255 : v <= 0.0f ? 0 : (uint8_t)v;
}

#if TNN_X86
/* quantize_one eight values at a time, returning how many it did: roundf as truncation plus
 * the carry of a fraction (exact: x - trunc(x)) of at least one half, with x's sign. Compilers
 * call roundf, and keep the comparisons scalar, in the plain loop. */
TNN_TARGET("avx2")
static ptrdiff_t quantize_avx2(const float *in, uint8_t *out, ptrdiff_t count, float scale,
                               float zero) {
    const __m256 divisor = _mm256_set1_ps(scale), half = _mm256_set1_ps(0.5f);
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256 zero_point = _mm256_set1_ps(zero), top = _mm256_set1_ps(255.0f);
    ptrdiff_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256 x = _mm256_div_ps(_mm256_loadu_ps(in + i), divisor);
        __m256 whole = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m256 fraction = _mm256_andnot_ps(sign, _mm256_sub_ps(x, whole));
        __m256 carry = _mm256_and_ps(_mm256_cmp_ps(fraction, half, _CMP_GE_OQ),
                                     _mm256_or_ps(one, _mm256_and_ps(sign, x)));
        __m256 v = _mm256_add_ps(_mm256_add_ps(whole, carry), zero_point);
        __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), top); /* NaN: 0, then */
        v = _mm256_blendv_ps(v, top, nan);                                /* 255 */
        __m256i q = _mm256_cvttps_epi32(v);
        __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(words, words));
    }
    return i;
}
#endif

static void quantize_range(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Map *p = arg;
    const float *in = p->in;
    uint8_t *out = p->out;
    ptrdiff_t i = start;
#if TNN_X86
    static int has_avx2 = -1; /* the same for every thread: a benign race */
    if (has_avx2 < 0) {
        __builtin_cpu_init();
        has_avx2 = __builtin_cpu_supports("avx2") != 0;
    }
    if (has_avx2) i += quantize_avx2(in + i, out + i, stop - i, p->scale, (float)p->zero);
#endif
    for (; i < stop; i++) out[i] = quantize_one(in[i], p->scale, (float)p->zero);
}

/* x > lo ? x : lo, then > hi ? hi : (NaN becomes lo, as std::max(lo, x) does). */
TNN_VECTOR_CLONES
static void clamp_range(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Map *p = arg;
    const float *in = p->in;
    float *out = p->out;
    const float lo = p->lo, hi = p->hi;
    for (ptrdiff_t i = start; i < stop; i++) {
        float v = in[i] > lo ? in[i] : lo;
        out[i] = v > hi ? hi : v;
    }
}

static void map(ptrdiff_t count, tnn_task fn, Map *p) {
    int threads = tnn_get_threads();
    tnn_parallel_for(count, tnn_grain(count, 1 << 16, threads), threads, fn, p);
}

void tnn_lut_u8(const uint8_t *in, uint8_t *out, ptrdiff_t count, const uint8_t table[256]) {
    Map p = {in, out, table, 0, 0, 0, 0};
    map(count, lut_u8_range, &p);
}

void tnn_lut_f32(const uint8_t *in, float *out, ptrdiff_t count, const float table[256]) {
    Map p = {in, out, table, 0, 0, 0, 0};
    map(count, lut_f32_range, &p);
}

void tnn_quantize_f32(const float *in, uint8_t *out, ptrdiff_t count, float scale, int zero) {
    Map p = {in, out, NULL, scale, 0, 0, zero};
    map(count, quantize_range, &p);
}

void tnn_clamp_f32(const float *in, float *out, ptrdiff_t count, float lo, float hi) {
    Map p = {in, out, NULL, 0, lo, hi, 0};
    map(count, clamp_range, &p);
}
