/* MEAN, REDUCE_SUM, REDUCE_MAX and REDUCE_MIN along one run of axes of a tensor seen as
 * [outer][n][inner] (the reduced axes in the middle).
 *
 * Float sums accumulate in double (NumPy's pairwise float32 sums agree within rounding);
 * maxima and minima start from the lowest and highest finite floats as Android's reference
 * does, NaN winning. The 8-bit MEAN is exact: the integer sum divided by the count, truncated,
 * as the reference computes it (int8 values are read 128 up and summed as what they stand
 * for). Rows of the output are split over the pool. */

#include "kernels.h"

#include <float.h>

typedef struct {
    const void *x;
    void *out;
    ptrdiff_t n, inner;
    int kind;
    uint8_t flip; /* int8 data: 0x80, else 0 */
} Reduce;

TNN_VECTOR_CLONES
static void reduce_f32_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Reduce *p = arg;
    const ptrdiff_t n = p->n, inner = p->inner;
    const float *x = p->x;
    float *out = p->out;
    for (ptrdiff_t o = start; o < stop; o++) {
        const float *slab = x + o * n * inner;
        float *result = out + o * inner;
        if (p->kind == TNN_REDUCE_MAX || p->kind == TNN_REDUCE_MIN) {
            const int max = p->kind == TNN_REDUCE_MAX;
            for (ptrdiff_t i = 0; i < inner; i++) result[i] = max ? -FLT_MAX : FLT_MAX;
            for (ptrdiff_t k = 0; k < n; k++) {
                const float *row = slab + k * inner;
                for (ptrdiff_t i = 0; i < inner; i++) {
                    float v = row[i], r = result[i];
                    int wins = max ? v > r : v < r;
                    result[i] = wins || v != v ? v : r;
                }
            }
            continue;
        }
        for (ptrdiff_t i = 0; i < inner; i++) {
            double sum = 0;
            for (ptrdiff_t k = 0; k < n; k++) sum += slab[k * inner + i];
            result[i] = p->kind == TNN_MEAN ? (float)sum / (float)n : (float)sum;
        }
    }
}

static void mean_u8_rows(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    const Reduce *p = arg;
    const ptrdiff_t n = p->n, inner = p->inner;
    const uint8_t *x = p->x;
    uint8_t *out = p->out;
    const uint8_t flip = p->flip;
    const int64_t offset = flip ? 128 * (int64_t)n : 0; /* what the flips added */
    for (ptrdiff_t o = start; o < stop; o++) {
        const uint8_t *slab = x + o * n * inner;
        for (ptrdiff_t i = 0; i < inner; i++) {
            int64_t sum = 0;
            for (ptrdiff_t k = 0; k < n; k++) sum += slab[k * inner + i] ^ flip;
            out[o * inner + i] = (uint8_t)((sum - offset) / n); /* int8: its byte */
        }
    }
}

void tnn_reduce(int kind, int quantized, const void *x, void *out, ptrdiff_t outer, ptrdiff_t n,
                ptrdiff_t inner) {
    Reduce p = {x, out, n, inner, kind, quantized == TNN_INT8 ? 0x80 : 0};
    int threads = tnn_get_threads();
    tnn_parallel_for(outer, tnn_grain(outer, 1 + (1 << 15) / (n * inner + 1), threads), threads,
                     quantized ? mean_u8_rows : reduce_f32_rows, &p);
}
