/* Binding of the convolution kernels (conv_f32.c, conv_q8.c). */

#include "binding.h"
#include "q8.h"

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
        tnn_parse_window(window, &g) < 0)
        return NULL;
    if (multiplier < 1) {
        PyErr_SetString(PyExc_ValueError, "depthwise: multiplier must be positive");
        return NULL;
    }
    Py_ssize_t channels = (Py_ssize_t)g.channels * multiplier;
    if (tnn_get_buffer(x, &b[0], 4, tnn_input_count(&g), 0, "depthwise input") < 0 ||
        tnn_get_buffer(taps, &b[1], 4, (Py_ssize_t)g.kernel_h * g.kernel_w * channels, 0,
                   "depthwise filter") < 0 ||
        (bias != Py_None && tnn_get_buffer(bias, &b[2], 4, channels, 0, "depthwise bias") < 0) ||
        tnn_get_buffer(out, &b[3], 4, tnn_output_pixels(&g) * channels, 1, "depthwise output") < 0) {
        tnn_release(b, 4);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_depthwise_f32(b[0].view.buf, b[1].view.buf, b[2].held ? b[2].view.buf : NULL,
                      b[3].view.buf, &g, multiplier, lo, hi);
    Py_END_ALLOW_THREADS
    tnn_release(b, 4);
    Py_RETURN_NONE;
}

static PyObject *conv_f32(PyObject *self, PyObject *args) {
    PyObject *x, *filter, *bias, *out, *window;
    int out_channels, groups;
    float lo, hi;
    tnn_window g;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOO!iiff", &x, &filter, &bias, &out, &PyTuple_Type, &window,
                          &out_channels, &groups, &lo, &hi) ||
        tnn_parse_window(window, &g) < 0)
        return NULL;
    if (!tnn_has_sgemm()) {
        PyErr_SetString(PyExc_RuntimeError, "conv_f32: no BLAS sgemm was set (set_sgemm)");
        return NULL;
    }
    if (out_channels < 1 || groups < 1 || out_channels % groups || g.channels % groups) {
        PyErr_SetString(PyExc_ValueError, "conv_f32: groups must divide both channel counts");
        return NULL;
    }
    Py_ssize_t k = (Py_ssize_t)g.kernel_h * g.kernel_w * (g.channels / groups);
    if (tnn_get_buffer(x, &b[0], 4, tnn_input_count(&g), 0, "input") < 0 ||
        tnn_get_buffer(filter, &b[1], 4, out_channels * k, 0, "filter") < 0 ||
        tnn_get_buffer(bias, &b[2], 4, out_channels, 0, "bias") < 0 ||
        tnn_get_buffer(out, &b[3], 4, tnn_output_pixels(&g) * out_channels, 1, "output") < 0) {
        tnn_release(b, 4);
        return NULL;
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    if (g.batches > 0)
        status = tnn_conv_f32(b[0].view.buf, b[1].view.buf, b[2].view.buf, b[3].view.buf, &g,
                              out_channels, groups, lo, hi);
    Py_END_ALLOW_THREADS
    tnn_release(b, 4);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *im2col_f32(PyObject *self, PyObject *args) {
    PyObject *x, *columns, *window;
    Py_ssize_t first, rows;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO!nn", &x, &columns, &PyTuple_Type, &window, &first, &rows) ||
        tnn_parse_window(window, &g) < 0)
        return NULL;
    if (first < 0 || rows < 0 || first + rows > tnn_output_pixels(&g)) {
        PyErr_SetString(PyExc_ValueError, "im2col: rows out of range");
        return NULL;
    }
    Py_ssize_t k = (Py_ssize_t)g.kernel_h * g.kernel_w * g.channels;
    if (tnn_get_buffer(x, &b[0], 4, tnn_input_count(&g), 0, "im2col input") < 0 ||
        tnn_get_buffer(columns, &b[1], 4, rows * k, 1, "im2col columns") < 0) {
        tnn_release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_im2col_f32(b[0].view.buf, b[1].view.buf, &g, first, rows);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
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
    if (tnn_get_buffer(data, &b[0], 4, rows * columns, 1, "bias_activation data") < 0 ||
        (bias != Py_None && tnn_get_buffer(bias, &b[1], 4, columns, 0, "bias_activation bias") < 0)) {
        tnn_release(b, 2);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_bias_activation_f32(b[0].view.buf, b[1].held ? b[1].view.buf : NULL, rows, columns, lo,
                            hi);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
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
    if (tnn_get_buffer(mult, &b[0], 4, -1, 0, "multipliers") < 0 ||
        tnn_get_buffer(shift, &b[1], 4, -1, 0, "shifts") < 0)
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
    int kind_limit = TNN_Q8_VNNI, signed_data = 0;
    QuantArgs q;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OpiOiiiiiiOOiii|ip", &filter, &signed_filter, &w_zero, &bias,
                          &out_channels, &kernel_h, &kernel_w, &group_in, &groups, &q.input_zero,
                          &mult, &shift, &q.output_zero, &q.lo, &q.hi, &kind_limit,
                          &signed_data) ||
        check_quant(&q) < 0)
        return NULL;
    if (out_channels < 1 || kernel_h < 1 || kernel_w < 1 || group_in < 1 || groups < 1 ||
        out_channels % groups) {
        PyErr_SetString(PyExc_ValueError, "q8_conv_plan: bad filter shape or groups");
        return NULL;
    }
    Py_ssize_t k = (Py_ssize_t)kernel_h * kernel_w * group_in;
    if (tnn_get_buffer(filter, &b[0], 1, out_channels * k, 0, "filter") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, out_channels, 0, "bias") < 0 ||
        get_requant(mult, shift, out_channels, b + 2, &q.per_channel) < 0) {
        tnn_release(b, 4);
        return NULL;
    }
    tnn_q8_conv *plan = tnn_q8_conv_create(b[0].view.buf, signed_filter, w_zero, b[1].view.buf,
                                           out_channels, kernel_h, kernel_w, group_in, groups,
                                           q.input_zero, b[2].view.buf, b[3].view.buf,
                                           q.per_channel, q.output_zero, q.lo, q.hi, kind_limit,
                                           signed_data);
    tnn_release(b, 4);
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
        tnn_parse_window(window, &g) < 0)
        return NULL;
    tnn_q8_conv *plan = PyCapsule_GetPointer(capsule, CONV_PLAN);
    if (!plan) return NULL;
    /* The plan knows its filter: the window must agree. */
    Py_ssize_t out_channels = tnn_q8_conv_fits(plan, &g);
    if (!out_channels) {
        PyErr_SetString(PyExc_ValueError, "q8_conv: the window does not match the plan's filter");
        return NULL;
    }
    if (tnn_get_buffer(x, &b[0], 1, tnn_input_count(&g), 0, "input") < 0 ||
        tnn_get_buffer(out, &b[1], 1, tnn_output_pixels(&g) * out_channels, 1, "output") < 0) {
        tnn_release(b, 2);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_q8_conv_run(plan, b[0].view.buf, b[1].view.buf, &g);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *q8_depthwise_plan(PyObject *self, PyObject *args) {
    PyObject *filter, *bias, *mult, *shift;
    int signed_filter, w_zero, channels, multiplier, kernel_h, kernel_w, signed_data = 0;
    QuantArgs q;
    Buffer b[4] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OpiOiiiiiOOiii|p", &filter, &signed_filter, &w_zero, &bias,
                          &channels, &multiplier, &kernel_h, &kernel_w, &q.input_zero, &mult,
                          &shift, &q.output_zero, &q.lo, &q.hi, &signed_data) ||
        check_quant(&q) < 0)
        return NULL;
    if (channels < 1 || multiplier < 1 || channels % multiplier || kernel_h < 1 || kernel_w < 1) {
        PyErr_SetString(PyExc_ValueError, "q8_depthwise_plan: bad filter shape or multiplier");
        return NULL;
    }
    if (tnn_get_buffer(filter, &b[0], 1, (Py_ssize_t)kernel_h * kernel_w * channels, 0, "filter") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, channels, 0, "bias") < 0 ||
        get_requant(mult, shift, channels, b + 2, &q.per_channel) < 0) {
        tnn_release(b, 4);
        return NULL;
    }
    tnn_q8_depthwise *plan = tnn_q8_depthwise_create(
        b[0].view.buf, signed_filter, w_zero, b[1].view.buf, channels, multiplier, kernel_h,
        kernel_w, q.input_zero, b[2].view.buf, b[3].view.buf, q.per_channel, q.output_zero, q.lo,
        q.hi, signed_data);
    tnn_release(b, 4);
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
        tnn_parse_window(window, &g) < 0)
        return NULL;
    tnn_q8_depthwise *plan = PyCapsule_GetPointer(capsule, DEPTHWISE_PLAN);
    if (!plan) return NULL;
    Py_ssize_t out_channels = tnn_q8_depthwise_fits(plan, &g);
    if (!out_channels) {
        PyErr_SetString(PyExc_ValueError,
                        "q8_depthwise: the window does not match the plan's filter");
        return NULL;
    }
    if (tnn_get_buffer(x, &b[0], 1, tnn_input_count(&g), 0, "input") < 0 ||
        tnn_get_buffer(out, &b[1], 1, tnn_output_pixels(&g) * out_channels, 1, "output") < 0) {
        tnn_release(b, 2);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_q8_depthwise_run(plan, b[0].view.buf, b[1].view.buf, &g);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
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

static PyObject *q8_conv_sums(PyObject *self, PyObject *args) {
    PyObject *capsule, *x, *sums, *window;
    tnn_window g;
    Buffer b[2] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!", &capsule, &x, &sums, &PyTuple_Type, &window) ||
        tnn_parse_window(window, &g) < 0)
        return NULL;
    tnn_q8_conv *plan = PyCapsule_GetPointer(capsule, CONV_PLAN);
    if (!plan) return NULL;
    Py_ssize_t out_channels = tnn_q8_conv_fits(plan, &g);
    if (!out_channels) {
        PyErr_SetString(PyExc_ValueError, "q8_conv_sums: the window does not match the plan");
        return NULL;
    }
    if (tnn_get_buffer(x, &b[0], 1, tnn_input_count(&g), 0, "input") < 0 ||
        tnn_get_buffer(sums, &b[1], 4, tnn_output_pixels(&g) * out_channels, 1, "sums") < 0) {
        tnn_release(b, 2);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_q8_conv_sums(plan, b[0].view.buf, b[1].view.buf, &g);
    Py_END_ALLOW_THREADS
    tnn_release(b, 2);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* The contributions of a transposed convolution: [input pixels][kernel_h * kernel_w][channels]
 * for the window's input (its channels are the output's). */
static Py_ssize_t contribution_count(const tnn_window *g) {
    return tnn_input_count(g) * g->kernel_h * g->kernel_w;
}

static PyObject *col2im_f32(PyObject *self, PyObject *args) {
    PyObject *contributions, *bias, *out, *window;
    float lo, hi;
    tnn_window g;
    Buffer b[3] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!ff", &contributions, &bias, &out, &PyTuple_Type, &window,
                          &lo, &hi) ||
        tnn_parse_window(window, &g) < 0)
        return NULL;
    if (tnn_get_buffer(contributions, &b[0], 4, contribution_count(&g), 0, "contributions") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, g.channels, 0, "bias") < 0 ||
        tnn_get_buffer(out, &b[2], 4, tnn_output_pixels(&g) * g.channels, 1, "output") < 0) {
        tnn_release(b, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_col2im_f32(b[0].view.buf, b[1].view.buf, b[2].view.buf, &g, lo, hi);
    Py_END_ALLOW_THREADS
    tnn_release(b, 3);
    Py_RETURN_NONE;
}

static PyObject *col2im_q8(PyObject *self, PyObject *args) {
    PyObject *contributions, *bias, *out, *window, *mult, *shift;
    QuantArgs q = {0, 0, 0, 0, 0};
    int signed_data = 0;
    tnn_window g;
    Buffer b[5] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOO!OOiii|p", &contributions, &bias, &out, &PyTuple_Type,
                          &window, &mult, &shift, &q.output_zero, &q.lo, &q.hi, &signed_data) ||
        tnn_parse_window(window, &g) < 0 || check_quant(&q) < 0)
        return NULL;
    if (tnn_get_buffer(contributions, &b[0], 4, contribution_count(&g), 0, "contributions") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, g.channels, 0, "bias") < 0 ||
        tnn_get_buffer(out, &b[2], 1, tnn_output_pixels(&g) * g.channels, 1, "output") < 0 ||
        get_requant(mult, shift, g.channels, b + 3, &q.per_channel) < 0) {
        tnn_release(b, 5);
        return NULL;
    }
    const int32_t *shifts = b[4].view.buf;
    int any_left = 0;
    for (Py_ssize_t i = 0; i < b[4].view.len / 4; i++) any_left |= shifts[i] > 0;
    tnn_requant rq = {b[3].view.buf, shifts, q.per_channel, any_left, q.output_zero, q.lo, q.hi,
                      signed_data ? 0x80 : 0};
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_col2im_q8(b[0].view.buf, b[1].view.buf, b[2].view.buf, &g, &rq);
    Py_END_ALLOW_THREADS
    tnn_release(b, 5);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef tnn_conv_methods[] = {
    {"depthwise_f32", depthwise_f32, METH_VARARGS,
     "depthwise_f32(x, taps, bias|None, out, window, multiplier, lo, hi)"},
    {"conv_f32", conv_f32, METH_VARARGS,
     "conv_f32(x, filter, bias, out, window, out_channels, groups, lo, hi): a float convolution"
     " through BLAS sgemm on the kernels' threads"},
    {"im2col_f32", im2col_f32, METH_VARARGS, "im2col_f32(x, columns, window, first_row, rows)"},
    {"bias_activation_f32", bias_activation_f32, METH_VARARGS,
     "bias_activation_f32(data, bias|None, rows, columns, lo, hi), in place"},
    {"q8_conv_plan", q8_conv_plan, METH_VARARGS,
     "q8_conv_plan(filter, signed, w_zero, bias, out_channels, kernel_h, kernel_w, group_in,"
     " groups, input_zero, multipliers, shifts, output_zero, lo, hi[, kind_limit, signed])"
     " -> plan; signed: int8 data, zero points and bounds given 128 up"},
    {"q8_conv", q8_conv, METH_VARARGS, "q8_conv(plan, x, out, window)"},
    {"q8_conv_kind", q8_conv_kind, METH_O, "q8_conv_kind(plan) -> the microkernel's name"},
    {"q8_conv_sums", q8_conv_sums, METH_VARARGS,
     "q8_conv_sums(plan, x, sums, window): the int32 sums instead of requantized outputs"},
    {"col2im_f32", col2im_f32, METH_VARARGS,
     "col2im_f32(contributions, bias, out, window, lo, hi): TRANSPOSE_CONV_2D's sums"},
    {"col2im_q8", col2im_q8, METH_VARARGS,
     "col2im_q8(contributions, bias, out, window, multipliers, shifts, output_zero, lo, hi"
     "[, signed])"},
    {"q8_depthwise_plan", q8_depthwise_plan, METH_VARARGS,
     "q8_depthwise_plan(filter, signed, w_zero, bias, channels, multiplier, kernel_h, kernel_w,"
     " input_zero, multipliers, shifts, output_zero, lo, hi[, signed]) -> plan"},
    {"q8_depthwise", q8_depthwise, METH_VARARGS, "q8_depthwise(plan, x, out, window)"},
    {NULL, NULL, 0, NULL},
};
