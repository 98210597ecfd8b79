/* Argument handling shared by the binding files (see binding.h). */

#include "binding.h"

int tnn_get_buffer(PyObject *obj, Buffer *b, Py_ssize_t itemsize, Py_ssize_t count,
                   int writable, const char *what) {
    b->held = 0;
    if (obj == Py_None) {
        PyErr_Format(PyExc_ValueError, "%s: an array is required", what);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) return -1;
    b->held = 1;
    if (itemsize >= 0 && b->view.itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: elements of %zd bytes expected, got %zd", what,
                     itemsize, b->view.itemsize);
        return -1;
    }
    if (count >= 0 && b->view.len != count * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd elements expected, got %zd", what, count,
                     b->view.len / itemsize);
        return -1;
    }
    return 0;
}

void tnn_release(Buffer *buffers, int count) {
    for (int i = 0; i < count; i++)
        if (buffers[i].held) PyBuffer_Release(&buffers[i].view);
}

int tnn_parse_window(PyObject *tuple, tnn_window *g) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 14) {
        PyErr_SetString(PyExc_ValueError, "window: 14 ints expected");
        return -1;
    }
    if (!PyArg_ParseTuple(tuple, "iiiiiiiiiiiiii;window: 14 ints", &g->batches, &g->height,
                          &g->width, &g->channels, &g->out_h, &g->out_w, &g->kernel_h,
                          &g->kernel_w, &g->stride_h, &g->stride_w, &g->dilation_h,
                          &g->dilation_w, &g->pad_top, &g->pad_left))
        return -1;
    /* Sizes the kernels' int arithmetic cannot overflow (native/conv.py keeps to them). */
    const int limit = 1 << 24;
    const int values[] = {g->height, g->width, g->channels, g->out_h, g->out_w, g->kernel_h,
                          g->kernel_w, g->stride_h, g->stride_w, g->dilation_h, g->dilation_w,
                          g->pad_top, g->pad_left};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++)
        if (values[i] > limit) {
            PyErr_SetString(PyExc_ValueError, "window: a size beyond 2^24");
            return -1;
        }
    if ((int64_t)(g->kernel_h - 1) * g->dilation_h >= limit ||
        (int64_t)(g->kernel_w - 1) * g->dilation_w >= limit) {
        PyErr_SetString(PyExc_ValueError, "window: a dilated filter beyond 2^24");
        return -1;
    }
    if (g->batches < 0 || g->height < 1 || g->width < 1 || g->channels < 1 || g->out_h < 1 ||
        g->out_w < 1 || g->kernel_h < 1 || g->kernel_w < 1 || g->stride_h < 1 ||
        g->stride_w < 1 || g->dilation_h < 1 || g->dilation_w < 1 || g->pad_top < 0 ||
        g->pad_left < 0) {
        PyErr_SetString(PyExc_ValueError, "window: sizes, strides and dilations must be positive"
                                          " and pads non-negative");
        return -1;
    }
    return 0;
}

Py_ssize_t tnn_input_count(const tnn_window *g) {
    return (Py_ssize_t)g->batches * g->height * g->width * g->channels;
}

Py_ssize_t tnn_output_pixels(const tnn_window *g) {
    return (Py_ssize_t)g->batches * g->out_h * g->out_w;
}
