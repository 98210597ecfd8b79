/* Shared declarations of torch-nnapi's native kernels (the _kernels extension module).
 *
 * The kernels are portable C11. Hot loops are written so that compilers vectorize them, and
 * TNN_VECTOR_CLONES builds extra copies of such a function for wider x86 vector units, the
 * one to run being picked when the module loads (GCC's and Clang's function multiversioning);
 * elsewhere the plain build runs. Hand-written SIMD (q8_gemm.c) is compiled for its target
 * with TNN_TARGET and only called after a run-time feature check.
 *
 * Quantized kernels reproduce the NumPy reference kernels (runtime/quant.py) bit for bit:
 * the fixed-point helpers below are gemmlowp's, as Android's reference kernels use them. */

#ifndef TNN_H
#define TNN_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(__clang__)
#define TNN_X86 1
#define TNN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#elif defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TNN_X86 1
#define TNN_VECTOR_CLONES
#else
#define TNN_X86 0
#define TNN_VECTOR_CLONES
#endif

#if TNN_X86
#define TNN_TARGET(features) __attribute__((target(features)))
#endif

/* Sixteen-lane vectors (GCC's and Clang's vector extensions, which every target lowers to its
 * own SIMD registers, or to scalar code); loads and stores go through memcpy, so any alignment
 * is fine. */
#if !defined(__GNUC__)
#error "the native kernels need GCC's or Clang's vector extensions"
#endif
typedef float tnn_f32x16 __attribute__((vector_size(64)));
/* Functions taking or returning these vectors are always inlined: a call between code built
 * for different vector units (TNN_VECTOR_CLONES) would pass them in incompatible ways. */
#define TNN_VECTOR_INLINE static inline __attribute__((always_inline))
typedef int32_t tnn_i32x16 __attribute__((vector_size(64)));

#define TNN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TNN_MAX(a, b) ((a) > (b) ? (a) : (b))

TNN_VECTOR_INLINE tnn_f32x16 tnn_load_f32x16(const float *p) {
    tnn_f32x16 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
TNN_VECTOR_INLINE void tnn_store_f32x16(float *p, tnn_f32x16 v) { __builtin_memcpy(p, &v, sizeof v); }
TNN_VECTOR_INLINE tnn_i32x16 tnn_load_i32x16(const int32_t *p) {
    tnn_i32x16 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
TNN_VECTOR_INLINE void tnn_store_i32x16(int32_t *p, tnn_i32x16 v) { __builtin_memcpy(p, &v, sizeof v); }
/* v < lo ? lo : v, then > hi ? hi : v, lane by lane (NaN stays NaN, as in the scalar code). */
TNN_VECTOR_INLINE tnn_f32x16 tnn_clamp_f32x16(tnn_f32x16 v, float lo, float hi) {
    tnn_f32x16 low, high; /* broadcasts (not v - v + lo: infinite lanes would become NaN) */
    for (int i = 0; i < 16; i++) low[i] = lo, high[i] = hi;
    tnn_i32x16 below = v < lo, above = v > hi;
    tnn_i32x16 bits = (tnn_i32x16)v;
    bits = (bits & ~below) | ((tnn_i32x16)low & below);
    bits = (bits & ~above) | ((tnn_i32x16)high & above);
    return (tnn_f32x16)bits;
}
/* Sixteen uint8 values widened to int32. */
TNN_VECTOR_INLINE tnn_i32x16 tnn_load_u8x16(const uint8_t *p) {
    /* (A loop, which compilers turn into one widening load; GCC 12 scalarizes
     * __builtin_convertvector of this.) */
    int32_t wide[16];
    for (int i = 0; i < 16; i++) wide[i] = p[i];
    return tnn_load_i32x16(wide);
}

/* ------------------------------------------------------------------ threads (threads.c) */

/* fn(arg, start, stop, thread) is called on consecutive ranges covering [0, count), each of
 * at most `grain` items, by up to `threads` threads (the caller is thread 0, the others are
 * numbered from 1, so kernels can give each its own scratch memory); returns when all are
 * done. `threads` is normally tnn_get_threads(), read once by the kernel. */
typedef void (*tnn_task)(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread);
void tnn_parallel_for(ptrdiff_t count, ptrdiff_t grain, int threads, tnn_task fn, void *arg);
/* Threads a parallel_for may use, the caller included (1: everything on the caller). */
void tnn_set_threads(int threads);
int tnn_get_threads(void);
/* A grain that splits `count` items into about four ranges per thread, at least `minimum`
 * items each (so that small jobs stay on one thread). */
ptrdiff_t tnn_grain(ptrdiff_t count, ptrdiff_t minimum, int threads);

/* ------------------------------------------------------------------ fixed point */

#define TNN_INT32_MIN (-2147483647 - 1)
#define TNN_INT32_MAX 2147483647

/* gemmlowp's SaturatingRoundingDoublingHighMul: (a * b * 2 + 2^31 rounded) >> 32. */
static inline int32_t tnn_srdhm(int32_t a, int32_t b) {
    if (a == TNN_INT32_MIN && b == TNN_INT32_MIN) return TNN_INT32_MAX;
    int64_t product = (int64_t)a * (int64_t)b;
    int64_t nudge = product >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((product + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp's RoundingDivideByPOT: x / 2^exponent, halves away from zero. */
static inline int32_t tnn_rdpot(int32_t x, int exponent) {
    int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* RoundingDivideByPOT of a 64-bit value, for exponents up to 62 (NumPy int64 semantics, as
 * the reference computes). */
static inline int64_t tnn_rdpot64(int64_t x, int exponent) {
    int64_t mask = ((int64_t)1 << exponent) - 1;
    int64_t remainder = x & mask;
    int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite's MultiplyByQuantizedMultiplier: x * multiplier * 2^(shift - 31), rounded, with the
 * left shift saturating to int32 as the reference does. */
static inline int32_t tnn_mbqm(int32_t x, int32_t multiplier, int shift) {
    int left = shift > 0 ? shift : 0;
    int right = shift > 0 ? 0 : -shift;
    if (left) {
        int64_t shifted = (int64_t)x * ((int64_t)1 << left);
        x = (int32_t)(shifted > TNN_INT32_MAX ? TNN_INT32_MAX
                      : shifted < TNN_INT32_MIN ? TNN_INT32_MIN : shifted);
    }
    return tnn_rdpot(tnn_srdhm(x, multiplier), right);
}

static inline uint8_t tnn_clamp_u8(int32_t v, int32_t lo, int32_t hi) {
    return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* How int32 accumulators become uint8 outputs: per output channel (or one for all)
 * multiplier and shift, then the zero point and the activation's clamp.
 *
 * Signed 8-bit outputs (TENSOR_QUANT8_ASYMM_SIGNED) are requantized in the unsigned domain
 * (zero point and bounds plus 128, where the arithmetic is the same) and stored with
 * `flip` 0x80, which turns u into u - 128 as a two's complement byte. */
typedef struct {
    const int32_t *multiplier; /* per channel, or one when per_channel == 0 */
    const int32_t *shift;      /* each in [-31, 31] */
    int per_channel;
    int any_left_shift;        /* some shift > 0: the vector paths leave those to tnn_mbqm */
    int32_t zero_point, lo, hi;
    uint8_t flip;              /* 0 (uint8 outputs) or 0x80 (int8 outputs) */
} tnn_requant;

/* The sign bit flipped: int8 v <-> uint8 v + 128 (0x80), or the bytes as they are (0). */
static inline void tnn_flip_bytes(uint8_t *bytes, ptrdiff_t count, uint8_t flip) {
    if (flip)
        for (ptrdiff_t i = 0; i < count; i++) bytes[i] ^= flip;
}

/* out[i] = requantized(acc[i]) for `count` channels starting at channel `first`. */
void tnn_requantize_row(const int32_t *acc, uint8_t *out, ptrdiff_t count, ptrdiff_t first,
                        const tnn_requant *rq);
/* out[i] = tnn_mbqm(x[i], multiplier, shift) for a shift <= 0 (vectorized; in place is fine). */
void tnn_mbqm_row(const int32_t *x, int32_t *out, ptrdiff_t count, int32_t multiplier, int shift);

#endif
