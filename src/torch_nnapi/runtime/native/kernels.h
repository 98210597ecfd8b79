/* The kernels the Python binding (module.c) calls, one section per C file. */

#ifndef TNN_KERNELS_H
#define TNN_KERNELS_H

#include "conv.h"

/* blas.c: C[m][n] (row stride ldc) = A[m][k] (lda) times B[n][k] (ldb) transposed, through
 * oneDNN's sgemm when tnn_set_onednn gave it, else the sgemm of NumPy's BLAS set by
 * tnn_set_sgemm (check tnn_has_sgemm first). */
void tnn_set_sgemm(void *function, int ilp64);
void tnn_set_onednn(void *function, void *set_threads, void *get_threads);
int tnn_has_sgemm(void);
/* 0: none, 1: NumPy's BLAS, 2: oneDNN */
int tnn_sgemm_library(void);
void tnn_sgemm_nt(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a, ptrdiff_t lda,
                  const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc);

/* conv_f32.c */
void tnn_depthwise_f32(const float *x, const float *taps, const float *bias, float *out,
                       const tnn_window *g, int multiplier, float lo, float hi);
void tnn_im2col_f32(const float *x, float *columns, const tnn_window *g, ptrdiff_t first_row,
                    ptrdiff_t rows);
void tnn_bias_activation_f32(float *data, const float *bias, ptrdiff_t rows, ptrdiff_t columns,
                             float lo, float hi);
/* A whole float convolution (groups dividing the channels; filter [out][kh][kw][in/groups])
 * through tnn_sgemm_nt. Returns 0, or -1 when out of memory. */
int tnn_conv_f32(const float *x, const float *filter, const float *bias, float *out,
                 const tnn_window *g, int out_channels, int groups, float lo, float hi);

/* conv_q8.c */
typedef struct tnn_q8_conv tnn_q8_conv;
typedef struct tnn_q8_depthwise tnn_q8_depthwise;
tnn_q8_conv *tnn_q8_conv_create(const void *filter, int signed_filter, int w_zero,
                                const int32_t *bias, int out_channels, int kernel_h,
                                int kernel_w, int group_in, int groups, int input_zero,
                                const int32_t *multiplier, const int32_t *shift, int per_channel,
                                int output_zero, int lo, int hi, int kind_limit,
                                int signed_data);
void tnn_q8_conv_free(tnn_q8_conv *plan);
int tnn_q8_conv_kind(const tnn_q8_conv *plan);
/* The output channels when the window fits the plan's filter, else 0. */
int tnn_q8_conv_fits(const tnn_q8_conv *plan, const tnn_window *g);
int tnn_q8_conv_run(const tnn_q8_conv *plan, const uint8_t *x, uint8_t *out,
                    const tnn_window *g);
/* The exact int32 sums (x - x_zero) * (w - w_zero) + bias instead of requantized outputs. */
int tnn_q8_conv_sums(const tnn_q8_conv *plan, const uint8_t *x, int32_t *sums,
                     const tnn_window *g);
tnn_q8_depthwise *tnn_q8_depthwise_create(const void *filter, int signed_filter, int w_zero,
                                          const int32_t *bias, int channels, int multiplier,
                                          int kernel_h, int kernel_w, int input_zero,
                                          const int32_t *mult, const int32_t *shift,
                                          int per_channel, int output_zero, int lo, int hi,
                                          int signed_data);
void tnn_q8_depthwise_free(tnn_q8_depthwise *plan);
int tnn_q8_depthwise_fits(const tnn_q8_depthwise *plan, const tnn_window *g);
int tnn_q8_depthwise_run(const tnn_q8_depthwise *plan, const uint8_t *x, uint8_t *out,
                          const tnn_window *g);

/* transpose_conv.c: each output pixel sums the contributions [n][height][width][taps][channels]
 * of the input pixels whose filter covers it (g: the input size, the output size, the filter,
 * strides and the top and left padding; channels: the output's). */
void tnn_col2im_f32(const float *contributions, const float *bias, float *out,
                    const tnn_window *g, float lo, float hi);
int tnn_col2im_q8(const int32_t *contributions, const int32_t *bias, uint8_t *out,
                  const tnn_window *g, const tnn_requant *rq);

/* elementwise.c */
enum { TNN_ADD = 0, TNN_SUB = 1, TNN_MUL = 2, TNN_DIV = 3 };

/* An output shape padded to 4 dimensions, and the inputs' element strides (0: broadcast). */
typedef struct {
    ptrdiff_t shape[4];
    ptrdiff_t a_strides[4], b_strides[4];
} tnn_broadcast;

/* Quantized ADD/SUB: both inputs, minus their zero points, shifted left by left_shift and
 * rescaled to a common scale (x/y multiplier and shift, y's negated for SUB), summed, then
 * rescaled to the output. MUL: the product of the centered inputs, rescaled to the output. */
typedef struct {
    int op;
    int32_t x_zero, y_zero, left_shift;
    int32_t x_multiplier, x_shift, y_multiplier, y_shift;
    int32_t out_multiplier, out_shift, out_zero, lo, hi;
    uint8_t flip; /* 0x80: int8 inputs and output (zero points and bounds given 128 up) */
} tnn_q8_binary;

void tnn_binary_f32(int op, const float *x, const float *y, float *out, const tnn_broadcast *b,
                    float lo, float hi);
void tnn_binary_q8(const uint8_t *x, const uint8_t *y, uint8_t *out, const tnn_broadcast *b,
                   const tnn_q8_binary *q);
void tnn_lut_u8(const uint8_t *in, uint8_t *out, ptrdiff_t count, const uint8_t table[256]);
void tnn_lut_f32(const uint8_t *in, float *out, ptrdiff_t count, const float table[256]);
void tnn_quantize_f32(const float *in, uint8_t *out, ptrdiff_t count, float scale, int zero);
void tnn_clamp_f32(const float *in, float *out, ptrdiff_t count, float lo, float hi);

/* The 8-bit data of a kernel that takes either: TENSOR_QUANT8_ASYMM or, since API 30,
 * TENSOR_QUANT8_ASYMM_SIGNED (0: float). */
enum { TNN_UINT8 = 1, TNN_INT8 = 2 };

/* pooling.c */
enum { TNN_AVERAGE_POOL = 0, TNN_MAX_POOL = 1, TNN_L2_POOL = 2 };
int tnn_pool(int kind, int quantized, const void *x, void *out, const tnn_window *g, float lo,
             float hi, int32_t qlo, int32_t qhi);

/* softmax.c: along the middle axis of [outer][n][inner] */
void tnn_softmax_f32(const float *x, float *out, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                     float beta);
void tnn_softmax_q8_sums(const uint8_t *x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                         const int32_t terms[256], int32_t *sums);
void tnn_softmax_q8_scale(const uint8_t *x, uint8_t *out, ptrdiff_t outer, ptrdiff_t n,
                          ptrdiff_t inner, const int32_t exps[256], int32_t diff_min,
                          const int32_t *reciprocal, const int32_t *exponent);

/* reduction.c: along the middle axis of [outer][n][inner], n >= 1; quantized (TNN_UINT8 or
 * TNN_INT8): MEAN only */
enum { TNN_MEAN = 0, TNN_REDUCE_SUM = 1, TNN_REDUCE_MAX = 2, TNN_REDUCE_MIN = 3 };
void tnn_reduce(int kind, int quantized, const void *x, void *out, ptrdiff_t outer, ptrdiff_t n,
                ptrdiff_t inner);

/* recurrent.c: one LSTM or RNN time step, float32. An LSTM cell's weights, given as the
 * stacked gates of the reference (input, forget, cell, output; no input gate with CIFG, then
 * gates == 3) and transposed so that each step reads them row by row. */
#define TNN_LSTM_LAYER_NORM_EPSILON 1e-8f
typedef struct {
    ptrdiff_t input_size, cells, output_size;
    int gates, activation; /* activation: TFLite's code (0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid) */
    float cell_clip, proj_clip; /* 0: no clipping */
    const float *weights;         /* [input_size + output_size][gates * cells]: W', then R' */
    const float *bias;            /* [gates * cells] */
    const float *peephole;        /* [3][cells] (input, forget, output), or NULL */
    const float *layer_norm;      /* [gates * cells], or NULL */
    const float *projection;      /* [cells][output_size] (transposed), or NULL */
    const float *projection_bias; /* [output_size], or NULL */
    /* Per weight row (input, then state values): bit g set when gate g has a non-zero
     * weight in it; the other products are skipped (a GRU's two LSTM steps have zero and
     * identity blocks). */
    const unsigned char *row_gates;
} tnn_lstm_cell;
/* Fills row_gates [rows] for weights [rows][gates * cells]. */
void tnn_lstm_row_gates(const float *weights, ptrdiff_t rows, int gates, ptrdiff_t cells,
                        unsigned char *row_gates);
/* x [batch][input_size], h_in [batch][output_size], c_in [batch][cells] -> scratch [gates]
 * [batch][cells] (the reference's blocks), h_out [batch][output_size], c_out [batch][cells].
 * Returns 0, or -1 when out of memory. */
int tnn_lstm_step_f32(const tnn_lstm_cell *cell, ptrdiff_t batch, const float *x,
                      const float *h_in, const float *c_in, float *scratch, float *h_out,
                      float *c_out);
/* h_out = activation(x W' + h_in R' + bias), weights [inputs + units][units] (W', then R'),
 * activation a fuse code. */
void tnn_rnn_step_f32(ptrdiff_t batch, ptrdiff_t inputs, ptrdiff_t units, const float *x,
                      const float *h_in, const float *weights, const float *bias,
                      int activation, float *h_out);

#endif
