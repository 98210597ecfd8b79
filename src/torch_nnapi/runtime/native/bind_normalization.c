/* Binding of the normalization and reduction kernels (softmax.c, reduction.c). */

#include "binding.h"

static int parse_rows(PyObject *tuple, Py_ssize_t *outer, Py_ssize_t *n, Py_ssize_t *inner) {
    if (!PyArg_ParseTuple(tuple, "nnn;rows: (outer, n, inner)", outer, n, inner)) return -1;
    if (*outer < 0 || *n < 1 || *inner < 1) {
        PyErr_SetString(PyExc_ValueError, "rows: sizes must be positive");
        return -1;
    }
    return 0;
}

static PyObject *softmax_f32(PyObject *self, PyObject *args) {
    PyObject *x, *out, *layout;
    Py_ssize_t outer, n, inner;
    float beta;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO!f", &x, &out, &PyTuple_Type, &layout, &beta) ||
        parse_rows(layout, &outer, &n, &inner) < 0)
        return NULL;
    Py_ssize_t count = outer * n * inner;
    if (tnn_get_buffer(x, &b[0], 4, count, 0, "input") < 0 ||
        tnn_get_buffer(out, &b[1], 4, count, 1, "output") < 0) {
        tnn_release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_softmax_f32(b[0].view.buf, b[1].view.buf, outer, n, inner, beta);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
    Py_RETURN_NONE;
}

static PyObject *softmax_q8_sums(PyObject *self, PyObject *args) {
    PyObject *x, *terms, *sums, *layout;
    Py_ssize_t outer, n, inner;
    Buffer b[3] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!", &x, &terms, &sums, &PyTuple_Type, &layout) ||
        parse_rows(layout, &outer, &n, &inner) < 0)
        return NULL;
    if (tnn_get_buffer(x, &b[0], 1, outer * n * inner, 0, "input") < 0 ||
        tnn_get_buffer(terms, &b[1], 4, 256, 0, "terms") < 0 ||
        tnn_get_buffer(sums, &b[2], 4, outer * inner, 1, "sums") < 0) {
        tnn_release(b, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_softmax_q8_sums(b[0].view.buf, outer, n, inner, b[1].view.buf, b[2].view.buf);
    Py_END_ALLOW_THREADS
    tnn_release(b, 3);
    Py_RETURN_NONE;
}

static PyObject *softmax_q8_scale(PyObject *self, PyObject *args) {
    PyObject *x, *out, *exps, *reciprocal, *exponent, *layout;
    Py_ssize_t outer, n, inner;
    int diff_min;
    Buffer b[5] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOiOOO!", &x, &out, &exps, &diff_min, &reciprocal, &exponent,
                          &PyTuple_Type, &layout) ||
        parse_rows(layout, &outer, &n, &inner) < 0)
        return NULL;
    Py_ssize_t count = outer * n * inner, rows = outer * inner;
    if (tnn_get_buffer(x, &b[0], 1, count, 0, "input") < 0 ||
        tnn_get_buffer(out, &b[1], 1, count, 1, "output") < 0 ||
        tnn_get_buffer(exps, &b[2], 4, 256, 0, "exponentials") < 0 ||
        tnn_get_buffer(reciprocal, &b[3], 4, rows, 0, "reciprocals") < 0 ||
        tnn_get_buffer(exponent, &b[4], 4, rows, 0, "exponents") < 0) {
        tnn_release(b, 5);
        return NULL;
    }
    const int32_t *e = b[4].view.buf;
    for (Py_ssize_t r = 0; r < rows; r++)
        if (e[r] < 0 || e[r] > 62) {
            PyErr_SetString(PyExc_ValueError, "softmax_q8_scale: exponents must be in [0, 62]");
            tnn_release(b, 5);
            return NULL;
        }
    Py_BEGIN_ALLOW_THREADS
    tnn_softmax_q8_scale(b[0].view.buf, b[1].view.buf, outer, n, inner, b[2].view.buf, diff_min,
                         b[3].view.buf, e);
    Py_END_ALLOW_THREADS
    tnn_release(b, 5);
    Py_RETURN_NONE;
}

/* reduce(kind, x, out, (outer, n, inner)[, signed]): float32, or uint8 (int8 when
 * `signed`) for MEAN. */
static PyObject *reduce(PyObject *self, PyObject *args) {
    PyObject *x, *out, *layout;
    Py_ssize_t outer, n, inner;
    int kind, signed_data = 0;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "iOOO!|p", &kind, &x, &out, &PyTuple_Type, &layout,
                          &signed_data) ||
        parse_rows(layout, &outer, &n, &inner) < 0)
        return NULL;
    if (kind < TNN_MEAN || kind > TNN_REDUCE_MIN) {
        PyErr_SetString(PyExc_ValueError, "reduce: unknown reduction");
        return NULL;
    }
    if (tnn_get_buffer(x, &b[0], -1, -1, 0, "input") < 0) return NULL;
    Py_ssize_t itemsize = b[0].view.itemsize;
    int quantized = itemsize != 1 ? 0 : signed_data ? TNN_INT8 : TNN_UINT8;
    if ((itemsize != 1 && itemsize != 4) || (quantized && kind != TNN_MEAN) ||
        b[0].view.len != outer * n * inner * itemsize ||
        tnn_get_buffer(out, &b[1], itemsize, outer * inner, 1, "output") < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "reduce: the input does not match the layout");
        tnn_release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_reduce(kind, quantized, b[0].view.buf, b[1].view.buf, outer, n, inner);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
    Py_RETURN_NONE;
}

PyMethodDef tnn_normalization_methods[] = {
    {"reduce", reduce, METH_VARARGS,
     "reduce(kind, x, out, (outer, n, inner)[, signed]): kind 0 MEAN, 1 SUM, 2 MAX, 3 MIN"},
    {"softmax_f32", softmax_f32, METH_VARARGS, "softmax_f32(x, out, (outer, n, inner), beta)"},
    {"softmax_q8_sums", softmax_q8_sums, METH_VARARGS,
     "softmax_q8_sums(x, terms, sums, (outer, n, inner))"},
    {"softmax_q8_scale", softmax_q8_scale, METH_VARARGS,
     "softmax_q8_scale(x, out, exps, diff_min, reciprocals, exponents, (outer, n, inner))"},
    {NULL, NULL, 0, NULL},
};
