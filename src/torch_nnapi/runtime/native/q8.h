/* 8-bit quantized GEMM-based convolutions: packed weights and the microkernels.
 *
 * A quantized convolution sums (x - x_zero) * (w - w_zero) exactly in int32. With
 * w' = w - w_zero packed once, the microkernels compute sum(x * w') over raw uint8 inputs and
 * the constant x_zero * sum(w') is folded into the bias, so padding is filled with x_zero.
 * Three microkernels, chosen when the plan is made:
 *   - VNNI (AVX-512 VNNI): uint8 x int8 products four at a time (w' must fit int8, which it
 *     does for weights quantized symmetrically, PyTorch's default);
 *   - AVX2: int16 x int16 products two at a time;
 *   - generic C for any other machine.
 * Every kernel sums the same integers, so all three give the same (exact) result. */

#ifndef TNN_Q8_H
#define TNN_Q8_H

#include "conv.h"

typedef enum { TNN_Q8_GENERIC = 0, TNN_Q8_AVX2 = 1, TNN_Q8_VNNI = 2 } tnn_q8_kind;

/* Rows and columns of one microkernel tile, and how many k values its packed panels group. */
typedef struct {
    tnn_q8_kind kind;
    int mr, nr, k_unit;
    int a_bytes; /* bytes per packed input value: 1 (uint8) or 2 (int16) */
} tnn_q8_shape;

tnn_q8_shape tnn_q8_shape_of(tnn_q8_kind kind);
/* The best kind, up to `limit`, this CPU runs for weights w' in [w_min, w_max]. */
tnn_q8_kind tnn_q8_best_kind(int w_min, int w_max, tnn_q8_kind limit);

/* Packs w' [n][k] (row-major int16) into `packed`, tnn_q8_packed_size bytes. */
size_t tnn_q8_packed_size(tnn_q8_shape s, int n, int k);
void tnn_q8_pack_weights(tnn_q8_shape s, const int16_t *w, int n, int k, void *packed);

/* Packs `rows` rows of raw uint8 values, each `k` long and `row_stride` apart, into an
 * input panel of s.mr rows of tnn_q8_padded_k(s, k) values (rows past `rows` are zero), each
 * value XORed with `flip` (0x80 makes int8 inputs the uint8 values 128 above them). */
int tnn_q8_padded_k(tnn_q8_shape s, int k);
void tnn_q8_pack_inputs(tnn_q8_shape s, const uint8_t *rows_u8, ptrdiff_t row_stride, int rows,
                        int k, uint8_t flip, void *panel);

/* acc[s.mr][s.nr] = panel (s.mr x padded k) times one packed block of s.nr columns. */
void tnn_q8_tile(tnn_q8_shape s, int padded_k, const void *panel, const void *block,
                 int32_t *acc);

/* acc + bias, requantized, for `rows` x `cols` of a tile (row stride s.nr) into out (row
 * stride out_stride), channels first..first+cols. */
void tnn_q8_store_tile(tnn_q8_shape s, const int32_t *acc, const int32_t *bias, int rows,
                       int cols, uint8_t *out, ptrdiff_t out_stride, int first,
                       const tnn_requant *rq);

#endif
