/* The kernels the Python binding (module.c) calls, one section per C file. */

#ifndef TNN_KERNELS_H
#define TNN_KERNELS_H

#include "conv.h"

/* conv_f32.c */
void tnn_depthwise_f32(const float *x, const float *taps, const float *bias, float *out,
                       const tnn_window *g, int multiplier, float lo, float hi);
void tnn_im2col_f32(const float *x, float *columns, const tnn_window *g, ptrdiff_t first_row,
                    ptrdiff_t rows);
void tnn_bias_activation_f32(float *data, const float *bias, ptrdiff_t rows, ptrdiff_t columns,
                             float lo, float hi);

/* conv_q8.c */
typedef struct tnn_q8_conv tnn_q8_conv;
typedef struct tnn_q8_depthwise tnn_q8_depthwise;
tnn_q8_conv *tnn_q8_conv_create(const void *filter, int signed_filter, int w_zero,
                                const int32_t *bias, int out_channels, int kernel_h,
                                int kernel_w, int group_in, int groups, int input_zero,
                                const int32_t *multiplier, const int32_t *shift, int per_channel,
                                int output_zero, int lo, int hi, int kind_limit);
void tnn_q8_conv_free(tnn_q8_conv *plan);
int tnn_q8_conv_kind(const tnn_q8_conv *plan);
/* The output channels when the window fits the plan's filter, else 0. */
int tnn_q8_conv_fits(const tnn_q8_conv *plan, const tnn_window *g);
int tnn_q8_conv_run(const tnn_q8_conv *plan, const uint8_t *x, uint8_t *out,
                    const tnn_window *g);
tnn_q8_depthwise *tnn_q8_depthwise_create(const void *filter, int signed_filter, int w_zero,
                                          const int32_t *bias, int channels, int multiplier,
                                          int kernel_h, int kernel_w, int input_zero,
                                          const int32_t *mult, const int32_t *shift,
                                          int per_channel, int output_zero, int lo, int hi);
void tnn_q8_depthwise_free(tnn_q8_depthwise *plan);
int tnn_q8_depthwise_fits(const tnn_q8_depthwise *plan, const tnn_window *g);
int tnn_q8_depthwise_run(const tnn_q8_depthwise *plan, const uint8_t *x, uint8_t *out,
                          const tnn_window *g);

#endif
