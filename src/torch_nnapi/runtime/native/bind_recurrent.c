/* Binding of the recurrent kernels (recurrent.c). */

#include "binding.h"

/* An optional float32 array of `count` elements: None gives NULL. */
static int optional_floats(PyObject *obj, Buffer *b, Py_ssize_t count, const char *what,
                           const float **data) {
    b->held = 0;
    *data = NULL;
    if (obj == Py_None) return 0;
    if (tnn_get_buffer(obj, b, 4, count, 0, what) < 0) return -1;
    *data = b->view.buf;
    return 0;
}

static PyObject *lstm_step_f32(PyObject *self, PyObject *args) {
    PyObject *weights, *bias, *peephole, *norm, *projection, *projection_bias, *x, *h, *c;
    PyObject *scratch, *h_out, *c_out;
    Py_ssize_t batch, input_size, cells, output_size;
    int gates, activation;
    float cell_clip, proj_clip;
    Buffer b[12] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "(nnnnii)(ff)OOOOOOOOOOOO;lstm_step_f32", &batch, &input_size,
                          &cells, &output_size, &gates, &activation, &cell_clip, &proj_clip,
                          &weights, &bias, &peephole, &norm, &projection, &projection_bias, &x,
                          &h, &c, &scratch, &h_out, &c_out))
        return NULL;
    if (batch < 0 || input_size < 1 || cells < 1 || output_size < 1 || (gates != 3 && gates != 4)) {
        PyErr_SetString(PyExc_ValueError, "lstm_step_f32: sizes must be positive, gates 3 or 4");
        return NULL;
    }
    Py_ssize_t width = gates * cells;
    tnn_lstm_cell cell = {.input_size = input_size, .cells = cells, .output_size = output_size,
                          .gates = gates, .activation = activation, .cell_clip = cell_clip,
                          .proj_clip = proj_clip};
    int failed = tnn_get_buffer(weights, &b[0], 4, (input_size + output_size) * width, 0,
                                "weights") < 0 ||
                 tnn_get_buffer(bias, &b[1], 4, width, 0, "bias") < 0 ||
                 optional_floats(peephole, &b[2], 3 * cells, "peephole", &cell.peephole) < 0 ||
                 optional_floats(norm, &b[3], width, "layer_norm", &cell.layer_norm) < 0 ||
                 optional_floats(projection, &b[4], cells * output_size, "projection",
                                 &cell.projection) < 0 ||
                 optional_floats(projection_bias, &b[5], output_size, "projection_bias",
                                 &cell.projection_bias) < 0 ||
                 tnn_get_buffer(x, &b[6], 4, batch * input_size, 0, "input") < 0 ||
                 tnn_get_buffer(h, &b[7], 4, batch * output_size, 0, "output_state_in") < 0 ||
                 tnn_get_buffer(c, &b[8], 4, batch * cells, 0, "cell_state_in") < 0 ||
                 tnn_get_buffer(scratch, &b[9], 4, batch * width, 1, "scratch_buffer") < 0 ||
                 tnn_get_buffer(h_out, &b[10], 4, batch * output_size, 1, "output_state_out") < 0 ||
                 tnn_get_buffer(c_out, &b[11], 4, batch * cells, 1, "cell_state_out") < 0;
    if (failed) {
        tnn_release(b, 12);
        return NULL;
    }
    if (!cell.projection && output_size != cells) {
        tnn_release(b, 12);
        PyErr_SetString(PyExc_ValueError, "lstm_step_f32: without a projection the output size"
                                          " must be the number of cells");
        return NULL;
    }
    cell.weights = b[0].view.buf;
    cell.bias = b[1].view.buf;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_lstm_step_f32(&cell, batch, b[6].view.buf, b[7].view.buf, b[8].view.buf,
                               b[9].view.buf, b[10].view.buf, b[11].view.buf);
    Py_END_ALLOW_THREADS
    tnn_release(b, 12);
    if (status < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *rnn_step_f32(PyObject *self, PyObject *args) {
    PyObject *weights, *bias, *x, *h, *out;
    Py_ssize_t batch, inputs, units;
    int activation;
    Buffer b[5] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "(nnni)OOOOO;rnn_step_f32", &batch, &inputs, &units, &activation,
                          &weights, &bias, &x, &h, &out))
        return NULL;
    if (batch < 0 || inputs < 1 || units < 1) {
        PyErr_SetString(PyExc_ValueError, "rnn_step_f32: sizes must be positive");
        return NULL;
    }
    if (tnn_get_buffer(weights, &b[0], 4, (inputs + units) * units, 0, "weights") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, units, 0, "bias") < 0 ||
        tnn_get_buffer(x, &b[2], 4, batch * inputs, 0, "input") < 0 ||
        tnn_get_buffer(h, &b[3], 4, batch * units, 0, "hidden_state_in") < 0 ||
        tnn_get_buffer(out, &b[4], 4, batch * units, 1, "hidden_state_out") < 0) {
        tnn_release(b, 5);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    tnn_rnn_step_f32(batch, inputs, units, b[2].view.buf, b[3].view.buf, b[0].view.buf,
                     b[1].view.buf, activation, b[4].view.buf);
    Py_END_ALLOW_THREADS
    tnn_release(b, 5);
    Py_RETURN_NONE;
}

PyMethodDef tnn_recurrent_methods[] = {
    {"lstm_step_f32", lstm_step_f32, METH_VARARGS,
     "lstm_step_f32((batch, input, cells, output, gates, activation), (cell_clip, proj_clip),"
     " weights, bias, peephole, layer_norm, projection, projection_bias, x, h, c, scratch,"
     " h_out, c_out): one LSTM step (recurrent.c)"},
    {"rnn_step_f32", rnn_step_f32, METH_VARARGS,
     "rnn_step_f32((batch, inputs, units, fuse_code), weights, bias, x, h, out): one RNN step"},
    {NULL, NULL, 0, NULL},
};
