/* Binding of the recurrent kernels (recurrent.c). */

#include "binding.h"

#include <stdlib.h>
#include <string.h>

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

/* An LSTM plan: the cell with copies of its weights, in one allocation. */
#define LSTM_PLAN "torch_nnapi.lstm_plan"

static void free_lstm_plan(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, LSTM_PLAN)); }

/* Copies `count` floats of an optional buffer to *at (advancing it); NULL stays NULL. */
static const float *copied(const Buffer *b, Py_ssize_t count, float **at) {
    if (!b->held) return NULL;
    float *copy = *at;
    memcpy(copy, b->view.buf, (size_t)count * sizeof(float));
    *at += count;
    return copy;
}

static PyObject *lstm_plan(PyObject *self, PyObject *args) {
    PyObject *weights, *bias, *peephole, *norm, *projection, *projection_bias;
    Py_ssize_t input_size, cells, output_size;
    int gates, activation;
    float cell_clip, proj_clip;
    Buffer b[6] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "(nnnii)(ff)OOOOOO;lstm_plan", &input_size, &cells,
                          &output_size, &gates, &activation, &cell_clip, &proj_clip, &weights,
                          &bias, &peephole, &norm, &projection, &projection_bias))
        return NULL;
    const Py_ssize_t limit = (Py_ssize_t)1 << 24;
    if (input_size < 1 || cells < 1 || output_size < 1 || input_size > limit || cells > limit ||
        output_size > limit || (gates != 3 && gates != 4)) {
        PyErr_SetString(PyExc_ValueError, "lstm_plan: sizes must be in [1, 2^24], gates 3 or 4");
        return NULL;
    }
    Py_ssize_t width = gates * cells, matrix = (input_size + output_size) * width;
    const float *unused;
    if (tnn_get_buffer(weights, &b[0], 4, matrix, 0, "weights") < 0 ||
        tnn_get_buffer(bias, &b[1], 4, width, 0, "bias") < 0 ||
        optional_floats(peephole, &b[2], 3 * cells, "peephole", &unused) < 0 ||
        optional_floats(norm, &b[3], width, "layer_norm", &unused) < 0 ||
        optional_floats(projection, &b[4], cells * output_size, "projection", &unused) < 0 ||
        optional_floats(projection_bias, &b[5], output_size, "projection_bias", &unused) < 0) {
        tnn_release(b, 6);
        return NULL;
    }
    if (!b[4].held && output_size != cells) {
        tnn_release(b, 6);
        PyErr_SetString(PyExc_ValueError, "lstm_plan: without a projection the output size must"
                                          " be the number of cells");
        return NULL;
    }
    Py_ssize_t floats = matrix + 2 * width + 3 * cells + cells * output_size + output_size;
    tnn_lstm_cell *cell = malloc(sizeof *cell + (size_t)floats * sizeof(float) +
                                 (size_t)(input_size + output_size));
    if (!cell) {
        tnn_release(b, 6);
        return PyErr_NoMemory();
    }
    float *at = (float *)(cell + 1);
    *cell = (tnn_lstm_cell){.input_size = input_size, .cells = cells,
                            .output_size = output_size, .gates = gates,
                            .activation = activation, .cell_clip = cell_clip,
                            .proj_clip = proj_clip};
    cell->weights = copied(&b[0], matrix, &at);
    cell->bias = copied(&b[1], width, &at);
    cell->peephole = copied(&b[2], 3 * cells, &at);
    cell->layer_norm = copied(&b[3], width, &at);
    cell->projection = copied(&b[4], cells * output_size, &at);
    cell->projection_bias = copied(&b[5], output_size, &at);
    unsigned char *row_gates = (unsigned char *)at;
    tnn_lstm_row_gates(cell->weights, input_size + output_size, gates, cells, row_gates);
    cell->row_gates = row_gates;
    tnn_release(b, 6);
    PyObject *capsule = PyCapsule_New(cell, LSTM_PLAN, free_lstm_plan);
    if (!capsule) free(cell);
    return capsule;
}

static PyObject *lstm_step_f32(PyObject *self, PyObject *args) {
    PyObject *capsule, *x, *h, *c, *scratch, *h_out, *c_out;
    Buffer b[6] = {{.held = 0}};
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOO;lstm_step_f32", &capsule, &x, &h, &c, &scratch, &h_out,
                          &c_out))
        return NULL;
    const tnn_lstm_cell *cell = PyCapsule_GetPointer(capsule, LSTM_PLAN);
    if (!cell) return NULL;
    if (tnn_get_buffer(x, &b[0], 4, -1, 0, "input") < 0) return NULL;
    Py_ssize_t batch = b[0].view.len / 4 / cell->input_size;
    Py_ssize_t width = (Py_ssize_t)cell->gates * cell->cells;
    if (b[0].view.len != batch * cell->input_size * 4) {
        tnn_release(b, 1);
        PyErr_SetString(PyExc_ValueError, "input: not a whole number of rows");
        return NULL;
    }
    if (tnn_get_buffer(h, &b[1], 4, batch * cell->output_size, 0, "output_state_in") < 0 ||
        tnn_get_buffer(c, &b[2], 4, batch * cell->cells, 0, "cell_state_in") < 0 ||
        tnn_get_buffer(scratch, &b[3], 4, batch * width, 1, "scratch_buffer") < 0 ||
        tnn_get_buffer(h_out, &b[4], 4, batch * cell->output_size, 1, "output_state_out") < 0 ||
        tnn_get_buffer(c_out, &b[5], 4, batch * cell->cells, 1, "cell_state_out") < 0) {
        tnn_release(b, 6);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = tnn_lstm_step_f32(cell, batch, b[0].view.buf, b[1].view.buf, b[2].view.buf,
                               b[3].view.buf, b[4].view.buf, b[5].view.buf);
    Py_END_ALLOW_THREADS
    tnn_release(b, 6);
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
    {"lstm_plan", lstm_plan, METH_VARARGS,
     "lstm_plan((input, cells, output, gates, activation), (cell_clip, proj_clip), weights,"
     " bias, peephole, layer_norm, projection, projection_bias) -> plan (a copy of the cell)"},
    {"lstm_step_f32", lstm_step_f32, METH_VARARGS,
     "lstm_step_f32(plan, x, h, c, scratch, h_out, c_out): one LSTM step (recurrent.c)"},
    {"rnn_step_f32", rnn_step_f32, METH_VARARGS,
     "rnn_step_f32((batch, inputs, units, fuse_code), weights, bias, x, h, out): one RNN step"},
    {NULL, NULL, 0, NULL},
};
