/* The quantized GEMM microkernels, their packing, and requantization (see q8.h).
 *
 * Packed weights: blocks of nr output channels, each [padded_k / k_unit][nr][k_unit] values
 * (int16 for the generic and AVX2 kernels, int8 for VNNI), zero past n and k. Input panels:
 * mr rows of padded_k values (int16, or uint8 for VNNI).
 *
 * Requantization follows tnn_mbqm exactly. Its vector form uses that gemmlowp's
 * SaturatingRoundingDoublingHighMul of int32 values equals floor((a * b + 2^30) / 2^31)
 * whenever a * b is not INT32_MIN squared (multipliers are positive, so it never is), and
 * that a logical 64-bit shift leaves the same low 32 bits as an arithmetic one. */

#include "q8.h"

#include <stdlib.h>
#include <string.h>

#if TNN_X86
#include <immintrin.h>
#endif

static inline int32_t load_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ------------------------------------------------------------------ kinds */

tnn_q8_shape tnn_q8_shape_of(tnn_q8_kind kind) {
    switch (kind) {
    case TNN_Q8_VNNI: return (tnn_q8_shape){TNN_Q8_VNNI, 8, 16, 4, 1};
    case TNN_Q8_AVX2: return (tnn_q8_shape){TNN_Q8_AVX2, 4, 16, 2, 2};
    default: return (tnn_q8_shape){TNN_Q8_GENERIC, 4, 16, 1, 2};
    }
}

tnn_q8_kind tnn_q8_best_kind(int w_min, int w_max, tnn_q8_kind limit) {
#if TNN_X86
    __builtin_cpu_init();
    if (limit >= TNN_Q8_VNNI && w_min >= -128 && w_max <= 127 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
        return TNN_Q8_VNNI;
    if (limit >= TNN_Q8_AVX2 && __builtin_cpu_supports("avx2")) return TNN_Q8_AVX2;
#else
    (void)w_min;
    (void)w_max;
    (void)limit;
#endif
    return TNN_Q8_GENERIC;
}

int tnn_q8_padded_k(tnn_q8_shape s, int k) { return (k + s.k_unit - 1) / s.k_unit * s.k_unit; }

static size_t weight_bytes(tnn_q8_shape s) { return s.kind == TNN_Q8_VNNI ? 1 : 2; }

size_t tnn_q8_packed_size(tnn_q8_shape s, int n, int k) {
    size_t blocks = (size_t)(n + s.nr - 1) / s.nr;
    return blocks * (size_t)tnn_q8_padded_k(s, k) * s.nr * weight_bytes(s);
}

void tnn_q8_pack_weights(tnn_q8_shape s, const int16_t *w, int n, int k, void *packed) {
    const int kp = tnn_q8_padded_k(s, k), u = s.k_unit;
    memset(packed, 0, tnn_q8_packed_size(s, n, k));
    for (int col = 0; col < n; col++) {
        size_t block = (size_t)(col / s.nr) * kp * s.nr;
        int lane = col % s.nr;
        for (int i = 0; i < k; i++) {
            size_t at = block + ((size_t)(i / u) * s.nr + lane) * u + i % u;
            if (s.kind == TNN_Q8_VNNI) ((int8_t *)packed)[at] = (int8_t)w[(size_t)col * k + i];
            else ((int16_t *)packed)[at] = w[(size_t)col * k + i];
        }
    }
}

void tnn_q8_pack_inputs(tnn_q8_shape s, const uint8_t *rows_u8, ptrdiff_t row_stride, int rows,
                        int k, uint8_t flip, void *panel) {
    const int kp = tnn_q8_padded_k(s, k);
    if (s.a_bytes == 1) {
        uint8_t *a = panel;
        for (int r = 0; r < s.mr; r++, a += kp) {
            if (r < rows) {
                memcpy(a, rows_u8 + r * row_stride, (size_t)k);
                tnn_flip_bytes(a, k, flip);
                memset(a + k, 0, (size_t)(kp - k));
            } else {
                memset(a, 0, (size_t)kp);
            }
        }
    } else {
        int16_t *a = panel;
        for (int r = 0; r < s.mr; r++, a += kp) {
            const uint8_t *src = rows_u8 + r * row_stride;
            int i = 0;
            if (r < rows)
                for (; i < k; i++) a[i] = (uint8_t)(src[i] ^ flip);
            for (; i < kp; i++) a[i] = 0;
        }
    }
}

/* ------------------------------------------------------------------ microkernels */

/* Written for compilers to vectorize along the 16 columns (16-bit products widened). */
static void tile_generic(int kp, const int16_t *a, const int16_t *b, int32_t *acc) {
    enum { MR = 4, NR = 16 };
    int32_t c0[NR] = {0}, c1[NR] = {0}, c2[NR] = {0}, c3[NR] = {0};
    const int16_t *a0 = a, *a1 = a + kp, *a2 = a + 2 * kp, *a3 = a + 3 * kp;
    for (int i = 0; i < kp; i++, b += NR) {
        const int16_t x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i];
        for (int n = 0; n < NR; n++) {
            c0[n] += (int32_t)x0 * b[n];
            c1[n] += (int32_t)x1 * b[n];
            c2[n] += (int32_t)x2 * b[n];
            c3[n] += (int32_t)x3 * b[n];
        }
    }
    memcpy(acc, c0, sizeof c0);
    memcpy(acc + NR, c1, sizeof c1);
    memcpy(acc + 2 * NR, c2, sizeof c2);
    memcpy(acc + 3 * NR, c3, sizeof c3);
}

#if TNN_X86
TNN_TARGET("avx2")
static void tile_avx2(int kp, const int16_t *a, const int16_t *b, int32_t *acc) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00;
    const int16_t *a0 = a, *a1 = a + kp, *a2 = a + 2 * kp, *a3 = a + 3 * kp;
    for (int i = 0; i < kp; i += 2, b += 32) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 16));
        __m256i x = _mm256_set1_epi32(load_i32(a0 + i));
        c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(x, b0));
        c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(x, b1));
        x = _mm256_set1_epi32(load_i32(a1 + i));
        c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(x, b0));
        c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(x, b1));
        x = _mm256_set1_epi32(load_i32(a2 + i));
        c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(x, b0));
        c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(x, b1));
        x = _mm256_set1_epi32(load_i32(a3 + i));
        c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(x, b0));
        c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(x, b1));
    }
    __m256i *out = (__m256i *)acc;
    _mm256_storeu_si256(out + 0, c00);
    _mm256_storeu_si256(out + 1, c01);
    _mm256_storeu_si256(out + 2, c10);
    _mm256_storeu_si256(out + 3, c11);
    _mm256_storeu_si256(out + 4, c20);
    _mm256_storeu_si256(out + 5, c21);
    _mm256_storeu_si256(out + 6, c30);
    _mm256_storeu_si256(out + 7, c31);
}

TNN_TARGET("avx512f,avx512bw,avx512vnni")
static void tile_vnni(int kp, const uint8_t *a, const int8_t *b, int32_t *acc) {
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
            c7 = c0;
    for (int i = 0; i < kp; i += 4, b += 64) {
        const __m512i w = _mm512_loadu_si512((const void *)b);
        c0 = _mm512_dpbusd_epi32(c0, _mm512_set1_epi32(load_i32(a + i)), w);
        c1 = _mm512_dpbusd_epi32(c1, _mm512_set1_epi32(load_i32(a + kp + i)), w);
        c2 = _mm512_dpbusd_epi32(c2, _mm512_set1_epi32(load_i32(a + 2 * kp + i)), w);
        c3 = _mm512_dpbusd_epi32(c3, _mm512_set1_epi32(load_i32(a + 3 * kp + i)), w);
        c4 = _mm512_dpbusd_epi32(c4, _mm512_set1_epi32(load_i32(a + 4 * kp + i)), w);
        c5 = _mm512_dpbusd_epi32(c5, _mm512_set1_epi32(load_i32(a + 5 * kp + i)), w);
        c6 = _mm512_dpbusd_epi32(c6, _mm512_set1_epi32(load_i32(a + 6 * kp + i)), w);
        c7 = _mm512_dpbusd_epi32(c7, _mm512_set1_epi32(load_i32(a + 7 * kp + i)), w);
    }
    _mm512_storeu_si512(acc + 0 * 16, c0);
    _mm512_storeu_si512(acc + 1 * 16, c1);
    _mm512_storeu_si512(acc + 2 * 16, c2);
    _mm512_storeu_si512(acc + 3 * 16, c3);
    _mm512_storeu_si512(acc + 4 * 16, c4);
    _mm512_storeu_si512(acc + 5 * 16, c5);
    _mm512_storeu_si512(acc + 6 * 16, c6);
    _mm512_storeu_si512(acc + 7 * 16, c7);
}
#endif

void tnn_q8_tile(tnn_q8_shape s, int padded_k, const void *panel, const void *block,
                 int32_t *acc) {
#if TNN_X86
    if (s.kind == TNN_Q8_VNNI) {
        tile_vnni(padded_k, panel, block, acc);
        return;
    }
    if (s.kind == TNN_Q8_AVX2) {
        tile_avx2(padded_k, panel, block, acc);
        return;
    }
#endif
    tile_generic(padded_k, panel, block, acc);
}

/* ------------------------------------------------------------------ requantization */

static void requantize_scalar(const int32_t *acc, const int32_t *bias, uint8_t *out,
                              ptrdiff_t count, ptrdiff_t first, const tnn_requant *rq) {
    for (ptrdiff_t i = 0; i < count; i++) {
        ptrdiff_t ch = rq->per_channel ? first + i : 0;
        int32_t total = acc[i] + (bias ? bias[i] : 0);
        int32_t v = tnn_mbqm(total, rq->multiplier[ch], rq->shift[ch]) + rq->zero_point;
        out[i] = tnn_clamp_u8(v, rq->lo, rq->hi);
    }
}

#if TNN_X86
/* x * multiplier * 2^-right, as tnn_mbqm with a right shift (shift = -right <= 0). */
TNN_TARGET("avx2")
static inline __m256i mbqm_avx2(__m256i x, __m256i multiplier, __m256i right) {
    const __m256i half = _mm256_set1_epi64x((int64_t)1 << 30), one = _mm256_set1_epi32(1);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, multiplier), half);
    __m256i odd = _mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(multiplier, 32)), half);
    __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1),
                                      0xAA);
    __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    __m256i remainder = _mm256_and_si256(high, mask);
    __m256i threshold = _mm256_add_epi32(_mm256_srli_epi32(mask, 1), _mm256_srli_epi32(high, 31));
    __m256i rounded = _mm256_srav_epi32(high, right);
    return _mm256_sub_epi32(rounded, _mm256_cmpgt_epi32(remainder, threshold));
}

TNN_TARGET("avx2")
static void requantize_avx2(const int32_t *acc, const int32_t *bias, uint8_t *out,
                            ptrdiff_t count, ptrdiff_t first, const tnn_requant *rq) {
    const __m256i zero_point = _mm256_set1_epi32(rq->zero_point);
    const __m256i lo = _mm256_set1_epi32(rq->lo), hi = _mm256_set1_epi32(rq->hi);
    __m256i multiplier = _mm256_set1_epi32(rq->multiplier[0]);
    __m256i right = _mm256_set1_epi32(-rq->shift[0]);
    ptrdiff_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(acc + i));
        if (bias) x = _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)(bias + i)));
        if (rq->per_channel) {
            multiplier = _mm256_loadu_si256((const __m256i *)(rq->multiplier + first + i));
            right = _mm256_sub_epi32(_mm256_setzero_si256(),
                                     _mm256_loadu_si256((const __m256i *)(rq->shift + first + i)));
        }
        __m256i v = _mm256_add_epi32(mbqm_avx2(x, multiplier, right), zero_point);
        v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
        __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(words, words));
    }
    requantize_scalar(acc + i, bias ? bias + i : NULL, out + i, count - i, first + i, rq);
}

TNN_TARGET("avx512f,avx512bw,avx512vl")
static inline __m512i mbqm_avx512(__m512i x, __m512i multiplier, __m512i right) {
    const __m512i half = _mm512_set1_epi64((int64_t)1 << 30), one = _mm512_set1_epi32(1);
    __m512i even = _mm512_add_epi64(_mm512_mul_epi32(x, multiplier), half);
    __m512i odd = _mm512_add_epi64(
        _mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(multiplier, 32)), half);
    __m512i high = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 31),
                                           _mm512_slli_epi64(odd, 1));
    __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
    __m512i remainder = _mm512_and_si512(high, mask);
    __m512i threshold = _mm512_add_epi32(_mm512_srli_epi32(mask, 1), _mm512_srli_epi32(high, 31));
    __m512i rounded = _mm512_srav_epi32(high, right);
    __mmask16 up = _mm512_cmpgt_epi32_mask(remainder, threshold);
    return _mm512_mask_add_epi32(rounded, up, rounded, one);
}

TNN_TARGET("avx512f,avx512bw,avx512vl")
static void requantize_avx512(const int32_t *acc, const int32_t *bias, uint8_t *out,
                              ptrdiff_t count, ptrdiff_t first, const tnn_requant *rq) {
    const __m512i zero_point = _mm512_set1_epi32(rq->zero_point);
    const __m512i lo = _mm512_set1_epi32(rq->lo), hi = _mm512_set1_epi32(rq->hi);
    __m512i multiplier = _mm512_set1_epi32(rq->multiplier[0]);
    __m512i right = _mm512_set1_epi32(-rq->shift[0]);
    for (ptrdiff_t i = 0; i < count; i += 16) {
        __mmask16 lanes = count - i >= 16 ? (__mmask16)0xFFFF
                                          : (__mmask16)((1u << (count - i)) - 1);
        __m512i x = _mm512_maskz_loadu_epi32(lanes, acc + i);
        if (bias) x = _mm512_add_epi32(x, _mm512_maskz_loadu_epi32(lanes, bias + i));
        if (rq->per_channel) {
            multiplier = _mm512_maskz_loadu_epi32(lanes, rq->multiplier + first + i);
            right = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_maskz_loadu_epi32(lanes, rq->shift + first + i));
        }
        __m512i v = _mm512_add_epi32(mbqm_avx512(x, multiplier, right), zero_point);
        v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
        _mm_mask_storeu_epi8(out + i, lanes, _mm512_cvtepi32_epi8(v));
    }
}
#endif

/* tnn_mbqm_row: the vector forms of tnn_mbqm without zero point and clamp. */
static void mbqm_row_scalar(const int32_t *x, int32_t *out, ptrdiff_t count, int32_t multiplier,
                            int shift) {
    for (ptrdiff_t i = 0; i < count; i++) out[i] = tnn_mbqm(x[i], multiplier, shift);
}

#if TNN_X86
TNN_TARGET("avx2")
static void mbqm_row_avx2(const int32_t *x, int32_t *out, ptrdiff_t count, int32_t multiplier,
                          int shift) {
    const __m256i m = _mm256_set1_epi32(multiplier), right = _mm256_set1_epi32(-shift);
    ptrdiff_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_si256((__m256i *)(out + i),
                            mbqm_avx2(_mm256_loadu_si256((const __m256i *)(x + i)), m, right));
    mbqm_row_scalar(x + i, out + i, count - i, multiplier, shift);
}

TNN_TARGET("avx512f,avx512bw,avx512vl")
static void mbqm_row_avx512(const int32_t *x, int32_t *out, ptrdiff_t count, int32_t multiplier,
                            int shift) {
    const __m512i m = _mm512_set1_epi32(multiplier), right = _mm512_set1_epi32(-shift);
    ptrdiff_t i = 0;
    for (; i + 16 <= count; i += 16)
        _mm512_storeu_si512(out + i, mbqm_avx512(_mm512_loadu_si512(x + i), m, right));
    mbqm_row_scalar(x + i, out + i, count - i, multiplier, shift);
}
#endif

typedef void (*mbqm_row_fn)(const int32_t *, int32_t *, ptrdiff_t, int32_t, int);

static mbqm_row_fn vector_mbqm_row(void) {
#if TNN_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return mbqm_row_avx512;
    if (__builtin_cpu_supports("avx2")) return mbqm_row_avx2;
#endif
    return mbqm_row_scalar;
}

void tnn_mbqm_row(const int32_t *x, int32_t *out, ptrdiff_t count, int32_t multiplier, int shift) {
    static mbqm_row_fn vector; /* the same for every thread: a benign race */
    if (shift > 0 || multiplier == TNN_INT32_MIN) {
        mbqm_row_scalar(x, out, count, multiplier, shift);
        return;
    }
    if (!vector) vector = vector_mbqm_row();
    vector(x, out, count, multiplier, shift);
}

typedef void (*requantize_fn)(const int32_t *, const int32_t *, uint8_t *, ptrdiff_t, ptrdiff_t,
                              const tnn_requant *);

static requantize_fn vector_requantizer(void) {
#if TNN_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return requantize_avx512;
    if (__builtin_cpu_supports("avx2")) return requantize_avx2;
#endif
    return requantize_scalar;
}

static requantize_fn requantizer(const tnn_requant *rq) {
    static requantize_fn vector; /* the same for every thread: a benign race */
    if (rq->any_left_shift) return requantize_scalar;
    if (!vector) vector = vector_requantizer();
    return vector;
}

void tnn_requantize_row(const int32_t *acc, uint8_t *out, ptrdiff_t count, ptrdiff_t first,
                        const tnn_requant *rq) {
    requantizer(rq)(acc, NULL, out, count, first, rq);
    tnn_flip_bytes(out, count, rq->flip);
}

void tnn_q8_store_tile(tnn_q8_shape s, const int32_t *acc, const int32_t *bias, int rows,
                       int cols, uint8_t *out, ptrdiff_t out_stride, int first,
                       const tnn_requant *rq) {
    requantize_fn fn = requantizer(rq);
    for (int r = 0; r < rows; r++) {
        fn(acc + (size_t)r * s.nr, bias, out + r * out_stride, cols, first, rq);
        tnn_flip_bytes(out + r * out_stride, cols, rq->flip);
    }
}
