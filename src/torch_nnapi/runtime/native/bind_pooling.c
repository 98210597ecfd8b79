/* Binding of the pooling kernels (pooling.c). */

#include "binding.h"

/* pool(kind, x, out, window, lo, hi, qlo, qhi[, signed]): uint8 or float32 by the arrays'
 * items; int8 when `signed` (qlo and qhi then given 128 up). */
static PyObject *pool(PyObject *self, PyObject *args) {
    PyObject *x, *out, *window;
    int kind, qlo, qhi, signed_data = 0;
    float lo, hi;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "iOOO!ffii|p", &kind, &x, &out, &PyTuple_Type, &window, &lo,
                          &hi, &qlo, &qhi, &signed_data) ||
        tnn_parse_window(window, &g) < 0)
        return NULL;
    if (kind < TNN_AVERAGE_POOL || kind > TNN_L2_POOL || g.dilation_h != 1 ||
        g.dilation_w != 1 || qlo < 0 || qhi > 255 || qlo > qhi) {
        PyErr_SetString(PyExc_ValueError, "pool: bad kind, dilation or bounds");
        return NULL;
    }
    if (tnn_get_buffer(x, &b[0], -1, -1, 0, "input") < 0) return NULL;
    Py_ssize_t itemsize = b[0].view.itemsize;
    int quantized = itemsize != 1 ? 0 : signed_data ? TNN_INT8 : TNN_UINT8;
    if ((itemsize != 1 && itemsize != 4) || (quantized && kind == TNN_L2_POOL) ||
        b[0].view.len != tnn_input_count(&g) * itemsize ||
        tnn_get_buffer(out, &b[1], itemsize, tnn_output_pixels(&g) * g.channels, 1, "output") < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "pool: the input does not match the window");
        tnn_release(b, 2);
        return NULL;
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    if (g.batches > 0)
        status = tnn_pool(kind, quantized, b[0].view.buf, b[1].view.buf, &g, lo, hi, qlo, qhi);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef tnn_pooling_methods[] = {
    {"pool", pool, METH_VARARGS,
     "pool(kind, x, out, window, lo, hi, qlo, qhi[, signed]): kind 0 average, 1 max, 2 L2"},
    {NULL, NULL, 0, NULL},
};
