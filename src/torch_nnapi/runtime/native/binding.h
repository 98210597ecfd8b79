/* The Python binding's shared argument handling (binding.c) and each family's method table.
 *
 * Arrays arrive through the buffer protocol (C-contiguous, outputs writable); every length is
 * checked against the geometry before a kernel runs, so a wrong call raises ValueError
 * instead of touching memory it should not. Kernels run with the GIL released. */

#ifndef TNN_BINDING_H
#define TNN_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernels.h"

/* A buffer of `count` items of `itemsize` bytes (either < 0: any). */
typedef struct {
    Py_buffer view;
    int held;
} Buffer;

int tnn_get_buffer(PyObject *obj, Buffer *b, Py_ssize_t itemsize, Py_ssize_t count,
                   int writable, const char *what);
void tnn_release(Buffer *buffers, int count);
int tnn_parse_window(PyObject *tuple, tnn_window *g);
Py_ssize_t tnn_input_count(const tnn_window *g);
Py_ssize_t tnn_output_pixels(const tnn_window *g);

extern PyMethodDef tnn_conv_methods[];
extern PyMethodDef tnn_elementwise_methods[];
extern PyMethodDef tnn_pooling_methods[];
extern PyMethodDef tnn_normalization_methods[];
extern PyMethodDef tnn_recurrent_methods[];
extern PyMethodDef tnn_fused_methods[];

#endif
