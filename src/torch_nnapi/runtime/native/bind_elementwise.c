/* Binding of the element-wise kernels (elementwise.c). */

#include "binding.h"

/* Reads a 4-tuple of non-negative integers. */
static int parse_four(PyObject *tuple, ptrdiff_t out[4], const char *what) {
    Py_ssize_t v[4];
    if (!PyTuple_Check(tuple) || !PyArg_ParseTuple(tuple, "nnnn", &v[0], &v[1], &v[2], &v[3])) {
        PyErr_Format(PyExc_ValueError, "%s: 4 integers expected", what);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if (v[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative value", what);
            return -1;
        }
        out[i] = v[i];
    }
    return 0;
}

/* The broadcast layout; checks that every element either input's strides reach is inside it
 * and that the innermost strides are 0 or 1. Returns the output's element count, or -1. */
static Py_ssize_t parse_broadcast(PyObject *shape, PyObject *a_strides, PyObject *b_strides,
                                  tnn_broadcast *b, Py_ssize_t a_count, Py_ssize_t b_count) {
    if (parse_four(shape, b->shape, "shape") < 0 ||
        parse_four(a_strides, b->a_strides, "input 0 strides") < 0 ||
        parse_four(b_strides, b->b_strides, "input 1 strides") < 0)
        return -1;
    Py_ssize_t count = 1, a_last = 0, b_last = 0;
    for (int i = 0; i < 4; i++) {
        count *= b->shape[i];
        a_last += (b->shape[i] - 1) * b->a_strides[i];
        b_last += (b->shape[i] - 1) * b->b_strides[i];
    }
    if (b->a_strides[3] > 1 || b->b_strides[3] > 1) {
        PyErr_SetString(PyExc_ValueError, "broadcast: innermost strides must be 0 or 1");
        return -1;
    }
    if (count > 0 && (a_last >= a_count || b_last >= b_count)) {
        PyErr_SetString(PyExc_ValueError, "broadcast: strides reach past an input");
        return -1;
    }
    return count;
}

static PyObject *binary_f32(PyObject *self, PyObject *args) {
    PyObject *x, *y, *out, *shape, *xs, *ys;
    int op;
    float lo, hi;
    tnn_broadcast b;
    Buffer buf[3] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "iOOOOOOff", &op, &x, &y, &out, &shape, &xs, &ys, &lo, &hi))
        return NULL;
    if (op < TNN_ADD || op > TNN_DIV) {
        PyErr_SetString(PyExc_ValueError, "binary_f32: unknown operation");
        return NULL;
    }
    Py_ssize_t count = -1;
    if (tnn_get_buffer(x, &buf[0], 4, -1, 0, "input 0") == 0 &&
        tnn_get_buffer(y, &buf[1], 4, -1, 0, "input 1") == 0)
        count = parse_broadcast(shape, xs, ys, &b, buf[0].view.len / 4, buf[1].view.len / 4);
    if (count < 0 || tnn_get_buffer(out, &buf[2], 4, count, 1, "output") < 0) {
        tnn_release(buf, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (count > 0) tnn_binary_f32(op, buf[0].view.buf, buf[1].view.buf, buf[2].view.buf, &b, lo, hi);
    Py_END_ALLOW_THREADS
    tnn_release(buf, 3);
    Py_RETURN_NONE;
}

static PyObject *binary_q8(PyObject *self, PyObject *args) {
    PyObject *x, *y, *out, *shape, *xs, *ys;
    tnn_q8_binary q;
    tnn_broadcast b;
    Buffer buf[3] = {{.held = 0}};
    (void)self;
    int signed_data = 0;
    if (!PyArg_ParseTuple(args, "OOOOOO(iiiiiiiiiiiii)|p", &x, &y, &out, &shape, &xs, &ys, &q.op,
                          &q.x_zero, &q.y_zero, &q.left_shift, &q.x_multiplier, &q.x_shift,
                          &q.y_multiplier, &q.y_shift, &q.out_multiplier, &q.out_shift,
                          &q.out_zero, &q.lo, &q.hi, &signed_data))
        return NULL;
    q.flip = signed_data ? 0x80 : 0; /* int8: zero points and bounds given 128 up */
    int shifts_ok = q.left_shift >= 0 && q.left_shift <= 20 && q.x_shift >= -31 && q.x_shift <= 0 &&
                    q.y_shift >= -31 && q.y_shift <= 0 && q.out_shift >= -31 && q.out_shift <= 31;
    if ((q.op != TNN_ADD && q.op != TNN_SUB && q.op != TNN_MUL) || !shifts_ok ||
        q.x_zero < 0 || q.x_zero > 255 || q.y_zero < 0 || q.y_zero > 255 || q.out_zero < 0 ||
        q.out_zero > 255 || q.lo < 0 || q.hi > 255 || q.lo > q.hi) {
        PyErr_SetString(PyExc_ValueError, "binary_q8: parameters out of range");
        return NULL;
    }
    Py_ssize_t count = -1;
    if (tnn_get_buffer(x, &buf[0], 1, -1, 0, "input 0") == 0 &&
        tnn_get_buffer(y, &buf[1], 1, -1, 0, "input 1") == 0)
        count = parse_broadcast(shape, xs, ys, &b, buf[0].view.len, buf[1].view.len);
    if (count < 0 || tnn_get_buffer(out, &buf[2], 1, count, 1, "output") < 0) {
        tnn_release(buf, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (count > 0) tnn_binary_q8(buf[0].view.buf, buf[1].view.buf, buf[2].view.buf, &b, &q);
    Py_END_ALLOW_THREADS
    tnn_release(buf, 3);
    Py_RETURN_NONE;
}

/* lut(x, out, table): out[i] = table[x[i]] for uint8 x; the table's element type (uint8 or
 * float32, 256 entries) is the output's. */
static PyObject *lut(PyObject *self, PyObject *args) {
    PyObject *x, *out, *table;
    Buffer buf[3] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO", &x, &out, &table)) return NULL;
    if (tnn_get_buffer(x, &buf[0], 1, -1, 0, "input") < 0 ||
        tnn_get_buffer(table, &buf[1], -1, -1, 0, "table") < 0) {
        tnn_release(buf, 3);
        return NULL;
    }
    Py_ssize_t itemsize = buf[1].view.itemsize, count = buf[0].view.len;
    if ((itemsize != 1 && itemsize != 4) || buf[1].view.len != 256 * itemsize ||
        tnn_get_buffer(out, &buf[2], itemsize, count, 1, "output") < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "lut: the table must hold 256 uint8 or float32");
        tnn_release(buf, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (itemsize == 1) tnn_lut_u8(buf[0].view.buf, buf[2].view.buf, count, buf[1].view.buf);
    else tnn_lut_f32(buf[0].view.buf, buf[2].view.buf, count, buf[1].view.buf);
    Py_END_ALLOW_THREADS
    tnn_release(buf, 3);
    Py_RETURN_NONE;
}

static PyObject *quantize_f32(PyObject *self, PyObject *args) {
    PyObject *x, *out;
    float scale;
    int zero;
    Buffer buf[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOfi", &x, &out, &scale, &zero)) return NULL;
    if (!(scale > 0) || zero < 0 || zero > 255) {
        PyErr_SetString(PyExc_ValueError, "quantize_f32: scale must be positive, zero in [0, 255]");
        return NULL;
    }
    if (tnn_get_buffer(x, &buf[0], 4, -1, 0, "input") < 0 ||
        tnn_get_buffer(out, &buf[1], 1, buf[0].view.len / 4, 1, "output") < 0) {
        tnn_release(buf, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_quantize_f32(buf[0].view.buf, buf[1].view.buf, buf[0].view.len / 4, scale, zero);
    Py_END_ALLOW_THREADS
    tnn_release(buf, 2);
    Py_RETURN_NONE;
}

static PyObject *clamp_f32(PyObject *self, PyObject *args) {
    PyObject *x, *out;
    float lo, hi;
    Buffer buf[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOff", &x, &out, &lo, &hi)) return NULL;
    if (tnn_get_buffer(x, &buf[0], 4, -1, 0, "input") < 0 ||
        tnn_get_buffer(out, &buf[1], 4, buf[0].view.len / 4, 1, "output") < 0) {
        tnn_release(buf, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_clamp_f32(buf[0].view.buf, buf[1].view.buf, buf[0].view.len / 4, lo, hi);
    Py_END_ALLOW_THREADS
    tnn_release(buf, 2);
    Py_RETURN_NONE;
}

PyMethodDef tnn_elementwise_methods[] = {
    {"binary_f32", binary_f32, METH_VARARGS,
     "binary_f32(op, x, y, out, shape4, x_strides4, y_strides4, lo, hi)"},
    {"binary_q8", binary_q8, METH_VARARGS,
     "binary_q8(x, y, out, shape4, x_strides4, y_strides4, (op, x_zero, y_zero, left_shift,"
     " x_multiplier, x_shift, y_multiplier, y_shift, out_multiplier, out_shift, out_zero, lo,"
     " hi)[, signed]): signed: int8 data, zero points and bounds given 128 up"},
    {"lut", lut, METH_VARARGS, "lut(x, out, table): out = table[x] (256 uint8 or float32)"},
    {"quantize_f32", quantize_f32, METH_VARARGS, "quantize_f32(x, out, scale, zero_point)"},
    {"clamp_f32", clamp_f32, METH_VARARGS, "clamp_f32(x, out, lo, hi): max(lo, x) then min"},
    {NULL, NULL, 0, NULL},
};
