/* Sixteen-lane float32 exp, tanh and logistic for the fused element-wise programs
 * (fused_f32.c): NumPy computes these with its own vectorized code, and calling libm's expf
 * per element would cost several times the arithmetic around it.
 *
 * exp: Cody-Waite reduction by ln 2 and Cephes' degree-6 polynomial (within 2 ulp of the
 * exact value on normal results), scaled by 2^n in two steps so that results down to the
 * denormals underflow gradually; overflow gives infinity and NaN stays NaN. tanh: Cephes'
 * odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above. logistic: the reference's
 * formula, 1 / (1 + exp(-x)). */

#ifndef TNN_VECMATH_H
#define TNN_VECMATH_H

#include "tnn.h"

/* Lanes where `mask` is true take `a`, the others `b`. */
TNN_VECTOR_INLINE tnn_f32x16 tnn_select_f32x16(tnn_i32x16 mask, tnn_f32x16 a, tnn_f32x16 b) {
    return (tnn_f32x16)(((tnn_i32x16)a & mask) | ((tnn_i32x16)b & ~mask));
}

/* e^(x - n ln 2) for n = round(x / ln 2), given as a float: Cody-Waite reduction by ln 2 in
 * two parts and Cephes' degree-6 polynomial (the caller scales by 2^n). softmax.c and
 * tnn_exp_f32x16 share it. */
TNN_VECTOR_INLINE tnn_f32x16 tnn_exp_reduced_f32x16(tnn_f32x16 x, tnn_f32x16 nf) {
    tnn_f32x16 r = x - nf * 0.693359375f - nf * -2.12194440e-4f;
    tnn_f32x16 z = r * r;
    tnn_f32x16 y = 1.9875691500e-4f * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    return y * z + r + 1.0f;
}

/* e^v for v in [-104, 89] (beyond these every float32 result is infinity or zero; the
 * arithmetic below gives exactly those at the bounds). */
TNN_VECTOR_INLINE tnn_f32x16 tnn_exp_bounded_f32x16(tnn_f32x16 v) {
    tnn_f32x16 t = v * 1.44269504088896341f + 0.5f;
    tnn_i32x16 n = __builtin_convertvector(t, tnn_i32x16); /* toward zero... */
    n -= (tnn_i32x16)(__builtin_convertvector(n, tnn_f32x16) > t) & 1; /* ...then floor */
    tnn_f32x16 y = tnn_exp_reduced_f32x16(v, __builtin_convertvector(n, tnn_f32x16));
    /* 2^n as 2^half * 2^(n - half): each factor a normal float for n in [-150, 129]. */
    tnn_i32x16 half = n >> 1;
    tnn_f32x16 first = (tnn_f32x16)((half + 127) << 23);
    tnn_f32x16 second = (tnn_f32x16)((n - half + 127) << 23);
    return y * first * second;
}

/* e^x for x <= 0 (no NaN): what tnn_exp_f32x16 gives, without its NaN and overflow steps. */
TNN_VECTOR_INLINE tnn_f32x16 tnn_exp_nonpositive_f32x16(tnn_f32x16 x) {
    const tnn_f32x16 zero = {0};
    return tnn_exp_bounded_f32x16(tnn_select_f32x16(x < -104.0f, zero - 104.0f, x));
}

TNN_VECTOR_INLINE tnn_f32x16 tnn_exp_f32x16(tnn_f32x16 x) {
    const tnn_i32x16 nan = x != x;
    const tnn_f32x16 zero = {0};
    tnn_f32x16 v = tnn_select_f32x16(nan, zero, x);
    v = tnn_select_f32x16(v > 89.0f, zero + 89.0f, v);
    v = tnn_select_f32x16(v < -104.0f, zero - 104.0f, v);
    return tnn_select_f32x16(nan, x, tnn_exp_bounded_f32x16(v));
}

TNN_VECTOR_INLINE tnn_f32x16 tnn_tanh_f32x16(tnn_f32x16 x) {
    const tnn_f32x16 zero = {0};
    const tnn_i32x16 sign = (tnn_i32x16)x & TNN_INT32_MIN;
    tnn_f32x16 a = (tnn_f32x16)((tnn_i32x16)x & TNN_INT32_MAX); /* |x| */
    tnn_f32x16 z = x * x;
    tnn_f32x16 p = -5.70498872745e-3f * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    tnn_f32x16 small = p * z * x + x;
    /* Large |x|: 1 - 2 / (e^(2|x|) + 1), |x| capped where the result is already 1. */
    tnn_f32x16 capped = tnn_select_f32x16(a > 20.0f, zero + 20.0f, a);
    tnn_f32x16 large = 1.0f - 2.0f / (tnn_exp_f32x16(capped + capped) + 1.0f);
    large = (tnn_f32x16)((tnn_i32x16)large | sign);
    tnn_f32x16 result = tnn_select_f32x16(a < 0.625f, small, large);
    return tnn_select_f32x16(x != x, x, result);
}

TNN_VECTOR_INLINE tnn_f32x16 tnn_logistic_f32x16(tnn_f32x16 x) {
    return 1.0f / (1.0f + tnn_exp_f32x16(-x));
}

#endif
