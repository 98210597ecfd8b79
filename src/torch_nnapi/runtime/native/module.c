/* torch_nnapi.runtime.native._kernels: the Python binding of the native kernels.
 *
 * Arrays arrive through the buffer protocol (C-contiguous, outputs writable); every length is
 * checked against the geometry here, so a wrong call raises ValueError instead of touching
 * memory it should not. Kernels run with the GIL released. Plans (packed weights) are
 * capsules freed with their last reference. The typed wrappers in native/__init__.py are the
 * intended callers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernels.h"
#include "q8.h"

/* ------------------------------------------------------------------ arguments */

/* A buffer of `count` items of `itemsize` bytes; count < 0: any length. */
typedef struct {
    Py_buffer view;
    int held;
} Buffer;

static int get_buffer(PyObject *obj, Buffer *b, Py_ssize_t itemsize, Py_ssize_t count,
                      int writable, const char *what) {
    b->held = 0;
    if (obj == Py_None) {
        PyErr_Format(PyExc_ValueError, "%s: an array is required", what);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0) return -1;
    b->held = 1;
    if (b->view.itemsize != itemsize) {
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

static void release(Buffer *buffers, int count) {
    for (int i = 0; i < count; i++)
        if (buffers[i].held) PyBuffer_Release(&buffers[i].view);
}

static int parse_window(PyObject *tuple, tnn_window *g) {
    if (!PyArg_ParseTuple(tuple, "iiiiiiiiiiiiii;window: 14 ints", &g->batches, &g->height,
                          &g->width, &g->channels, &g->out_h, &g->out_w, &g->kernel_h,
                          &g->kernel_w, &g->stride_h, &g->stride_w, &g->dilation_h,
                          &g->dilation_w, &g->pad_top, &g->pad_left))
        return -1;
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

static Py_ssize_t input_count(const tnn_window *g) {
    return (Py_ssize_t)g->batches * g->height * g->width * g->channels;
}

static Py_ssize_t output_pixels(const tnn_window *g) {
    return (Py_ssize_t)g->batches * g->out_h * g->out_w;
}

/* ------------------------------------------------------------------ threads */

static PyObject *set_threads(PyObject *self, PyObject *args) {
    int threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &threads)) return NULL;
    if (threads < 1) {
        PyErr_SetString(PyExc_ValueError, "threads must be at least 1");
        return NULL;
    }
    tnn_set_threads(threads);
    Py_RETURN_NONE;
}

static PyObject *get_threads(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyLong_FromLong(tnn_get_threads());
}

/* ------------------------------------------------------------------ float convolution */

static PyObject *depthwise_f32(PyObject *self, PyObject *args) {
    PyObject *x, *taps, *bias, *out, *window;
    int multiplier;
    float lo, hi;
    tnn_window g;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOO!iff", &x, &taps, &bias, &out, &PyTuple_Type, &window,
                          &multiplier, &lo, &hi) ||
        parse_window(window, &g) < 0)
        return NULL;
    if (multiplier < 1) {
        PyErr_SetString(PyExc_ValueError, "depthwise: multiplier must be positive");
        return NULL;
    }
    Py_ssize_t channels = (Py_ssize_t)g.channels * multiplier;
    if (get_buffer(x, &b[0], 4, input_count(&g), 0, "depthwise input") < 0 ||
        get_buffer(taps, &b[1], 4, (Py_ssize_t)g.kernel_h * g.kernel_w * channels, 0,
                   "depthwise filter") < 0 ||
        (bias != Py_None && get_buffer(bias, &b[2], 4, channels, 0, "depthwise bias") < 0) ||
        get_buffer(out, &b[3], 4, output_pixels(&g) * channels, 1, "depthwise output") < 0) {
        release(b, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_depthwise_f32(b[0].view.buf, b[1].view.buf, b[2].held ? b[2].view.buf : NULL,
                      b[3].view.buf, &g, multiplier, lo, hi);
    Py_END_ALLOW_THREADS
    release(b, 4);
    Py_RETURN_NONE;
}

static PyObject *im2col_f32(PyObject *self, PyObject *args) {
    PyObject *x, *columns, *window;
    Py_ssize_t first, rows;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO!nn", &x, &columns, &PyTuple_Type, &window, &first, &rows) ||
        parse_window(window, &g) < 0)
        return NULL;
    if (first < 0 || rows < 0 || first + rows > output_pixels(&g)) {
        PyErr_SetString(PyExc_ValueError, "im2col: rows out of range");
        return NULL;
    }
    Py_ssize_t k = (Py_ssize_t)g.kernel_h * g.kernel_w * g.channels;
    if (get_buffer(x, &b[0], 4, input_count(&g), 0, "im2col input") < 0 ||
        get_buffer(columns, &b[1], 4, rows * k, 1, "im2col columns") < 0) {
        release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_im2col_f32(b[0].view.buf, b[1].view.buf, &g, first, rows);
    Py_END_ALLOW_THREADS
    release(b, 2);
    Py_RETURN_NONE;
}

static PyObject *bias_activation_f32(PyObject *self, PyObject *args) {
    PyObject *data, *bias;
    Py_ssize_t rows, columns;
    float lo, hi;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOnnff", &data, &bias, &rows, &columns, &lo, &hi)) return NULL;
    if (rows < 0 || columns < 0) {
        PyErr_SetString(PyExc_ValueError, "bias_activation: negative size");
        return NULL;
    }
    if (get_buffer(data, &b[0], 4, rows * columns, 1, "bias_activation data") < 0 ||
        (bias != Py_None && get_buffer(bias, &b[1], 4, columns, 0, "bias_activation bias") < 0)) {
        release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_bias_activation_f32(b[0].view.buf, b[1].held ? b[1].view.buf : NULL, rows, columns, lo,
                            hi);
    Py_END_ALLOW_THREADS
    release(b, 2);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ quantized convolution */

static const char CONV_PLAN[] = "torch_nnapi.q8_conv";
static const char DEPTHWISE_PLAN[] = "torch_nnapi.q8_depthwise";

static void free_conv_plan(PyObject *capsule) {
    tnn_q8_conv_free(PyCapsule_GetPointer(capsule, CONV_PLAN));
}

static void free_depthwise_plan(PyObject *capsule) {
    tnn_q8_depthwise_free(PyCapsule_GetPointer(capsule, DEPTHWISE_PLAN));
}

typedef struct {
    int input_zero, output_zero, lo, hi, per_channel;
} QuantArgs;

/* Reads the (multipliers, shifts) buffers: `channels` each, or one each. */
static int get_requant(PyObject *mult, PyObject *shift, Py_ssize_t channels, Buffer *b,
                       int *per_channel) {
    if (get_buffer(mult, &b[0], 4, -1, 0, "multipliers") < 0 ||
        get_buffer(shift, &b[1], 4, -1, 0, "shifts") < 0)
        return -1;
    Py_ssize_t n = b[0].view.len / 4;
    if ((n != 1 && n != channels) || b[1].view.len / 4 != n) {
        PyErr_Format(PyExc_ValueError, "multipliers and shifts: 1 or %zd each expected",
                     channels);
        return -1;
    }
    const int32_t *m = b[0].view.buf, *s = b[1].view.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (m[i] <= 0 || s[i] < -31 || s[i] > 31) {
            PyErr_SetString(PyExc_ValueError, "multipliers must be positive, shifts in [-31, 31]");
            return -1;
        }
    *per_channel = n != 1 || channels == 1;
    return 0;
}

static int check_quant(const QuantArgs *q) {
    if (q->input_zero < 0 || q->input_zero > 255 || q->output_zero < 0 || q->output_zero > 255 ||
        q->lo < 0 || q->hi > 255 || q->lo > q->hi) {
        PyErr_SetString(PyExc_ValueError, "zero points and bounds must be in [0, 255]");
        return -1;
    }
    return 0;
}

static PyObject *q8_conv_plan(PyObject *self, PyObject *args) {
    PyObject *filter, *bias, *mult, *shift;
    int signed_filter, w_zero, out_channels, kernel_h, kernel_w, group_in, groups;
    int kind_limit = TNN_Q8_VNNI;
    QuantArgs q;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OpiOiiiiiiOOiii|i", &filter, &signed_filter, &w_zero, &bias,
                          &out_channels, &kernel_h, &kernel_w, &group_in, &groups, &q.input_zero,
                          &mult, &shift, &q.output_zero, &q.lo, &q.hi, &kind_limit) ||
        check_quant(&q) < 0)
        return NULL;
    if (out_channels < 1 || kernel_h < 1 || kernel_w < 1 || group_in < 1 || groups < 1 ||
        out_channels % groups) {
        PyErr_SetString(PyExc_ValueError, "q8_conv_plan: bad filter shape or groups");
        return NULL;
    }
    Py_ssize_t k = (Py_ssize_t)kernel_h * kernel_w * group_in;
    if (get_buffer(filter, &b[0], 1, out_channels * k, 0, "filter") < 0 ||
        get_buffer(bias, &b[1], 4, out_channels, 0, "bias") < 0 ||
        get_requant(mult, shift, out_channels, b + 2, &q.per_channel) < 0) {
        release(b, 4);
        return NULL;
    }
    tnn_q8_conv *plan = tnn_q8_conv_create(b[0].view.buf, signed_filter, w_zero, b[1].view.buf,
                                           out_channels, kernel_h, kernel_w, group_in, groups,
                                           q.input_zero, b[2].view.buf, b[3].view.buf,
                                           q.per_channel, q.output_zero, q.lo, q.hi, kind_limit);
    release(b, 4);
    if (!plan) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(plan, CONV_PLAN, free_conv_plan);
    if (!capsule) tnn_q8_conv_free(plan);
    return capsule;
}

static PyObject *q8_conv(PyObject *self, PyObject *args) {
    PyObject *capsule, *x, *out, *window;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!", &capsule, &x, &out, &PyTuple_Type, &window) ||
        parse_window(window, &g) < 0)
        return NULL;
    tnn_q8_conv *plan = PyCapsule_GetPointer(capsule, CONV_PLAN);
    if (!plan) return NULL;
    /* The plan knows its filter: the window must agree. */
    Py_ssize_t out_channels = tnn_q8_conv_fits(plan, &g);
    if (!out_channels) {
        PyErr_SetString(PyExc_ValueError, "q8_conv: the window does not match the plan's filter");
        return NULL;
    }
    if (get_buffer(x, &b[0], 1, input_count(&g), 0, "input") < 0 ||
        get_buffer(out, &b[1], 1, output_pixels(&g) * out_channels, 1, "output") < 0) {
        release(b, 2);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_q8_conv_run(plan, b[0].view.buf, b[1].view.buf, &g);
    Py_END_ALLOW_THREADS
    release(b, 2);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *q8_depthwise_plan(PyObject *self, PyObject *args) {
    PyObject *filter, *bias, *mult, *shift;
    int signed_filter, w_zero, channels, multiplier, kernel_h, kernel_w;
    QuantArgs q;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OpiOiiiiiOOiii", &filter, &signed_filter, &w_zero, &bias,
                          &channels, &multiplier, &kernel_h, &kernel_w, &q.input_zero, &mult,
                          &shift, &q.output_zero, &q.lo, &q.hi) ||
        check_quant(&q) < 0)
        return NULL;
    if (channels < 1 || multiplier < 1 || channels % multiplier || kernel_h < 1 || kernel_w < 1) {
        PyErr_SetString(PyExc_ValueError, "q8_depthwise_plan: bad filter shape or multiplier");
        return NULL;
    }
    if (get_buffer(filter, &b[0], 1, (Py_ssize_t)kernel_h * kernel_w * channels, 0, "filter") < 0 ||
        get_buffer(bias, &b[1], 4, channels, 0, "bias") < 0 ||
        get_requant(mult, shift, channels, b + 2, &q.per_channel) < 0) {
        release(b, 4);
        return NULL;
    }
    tnn_q8_depthwise *plan = tnn_q8_depthwise_create(
        b[0].view.buf, signed_filter, w_zero, b[1].view.buf, channels, multiplier, kernel_h,
        kernel_w, q.input_zero, b[2].view.buf, b[3].view.buf, q.per_channel, q.output_zero, q.lo,
        q.hi);
    release(b, 4);
    if (!plan) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(plan, DEPTHWISE_PLAN, free_depthwise_plan);
    if (!capsule) tnn_q8_depthwise_free(plan);
    return capsule;
}

static PyObject *q8_depthwise(PyObject *self, PyObject *args) {
    PyObject *capsule, *x, *out, *window;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!", &capsule, &x, &out, &PyTuple_Type, &window) ||
        parse_window(window, &g) < 0)
        return NULL;
    tnn_q8_depthwise *plan = PyCapsule_GetPointer(capsule, DEPTHWISE_PLAN);
    if (!plan) return NULL;
    Py_ssize_t out_channels = tnn_q8_depthwise_fits(plan, &g);
    if (!out_channels) {
        PyErr_SetString(PyExc_ValueError,
                        "q8_depthwise: the window does not match the plan's filter");
        return NULL;
    }
    if (get_buffer(x, &b[0], 1, input_count(&g), 0, "input") < 0 ||
        get_buffer(out, &b[1], 1, output_pixels(&g) * out_channels, 1, "output") < 0) {
        release(b, 2);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_q8_depthwise_run(plan, b[0].view.buf, b[1].view.buf, &g);
    Py_END_ALLOW_THREADS
    release(b, 2);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *q8_conv_kind(PyObject *self, PyObject *capsule) {
    (void)self;
    tnn_q8_conv *plan = PyCapsule_GetPointer(capsule, CONV_PLAN);
    if (!plan) return NULL;
    static const char *names[] = {"generic", "avx2", "avx512vnni"};
    return PyUnicode_FromString(names[tnn_q8_conv_kind(plan)]);
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"set_threads", set_threads, METH_VARARGS, "set_threads(n): threads the kernels may use"},
    {"get_threads", get_threads, METH_NOARGS, "get_threads() -> n"},
    {"depthwise_f32", depthwise_f32, METH_VARARGS,
     "depthwise_f32(x, taps, bias|None, out, window, multiplier, lo, hi)"},
    {"im2col_f32", im2col_f32, METH_VARARGS, "im2col_f32(x, columns, window, first_row, rows)"},
    {"bias_activation_f32", bias_activation_f32, METH_VARARGS,
     "bias_activation_f32(data, bias|None, rows, columns, lo, hi), in place"},
    {"q8_conv_plan", q8_conv_plan, METH_VARARGS,
     "q8_conv_plan(filter, signed, w_zero, bias, out_channels, kernel_h, kernel_w, group_in,"
     " groups, input_zero, multipliers, shifts, output_zero, lo, hi[, kind_limit]) -> plan"},
    {"q8_conv", q8_conv, METH_VARARGS, "q8_conv(plan, x, out, window)"},
    {"q8_conv_kind", q8_conv_kind, METH_O, "q8_conv_kind(plan) -> the microkernel's name"},
    {"q8_depthwise_plan", q8_depthwise_plan, METH_VARARGS,
     "q8_depthwise_plan(filter, signed, w_zero, bias, channels, multiplier, kernel_h, kernel_w,"
     " input_zero, multipliers, shifts, output_zero, lo, hi) -> plan"},
    {"q8_depthwise", q8_depthwise, METH_VARARGS, "q8_depthwise(plan, x, out, window)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels",
                                    "torch-nnapi's native kernels (see native/__init__.py)", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
