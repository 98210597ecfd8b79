/* Binding of the fused element-wise programs (fused_f32.c): a program is planned once into a
 * capsule (checked, each input's reach within its size) and run on arrays. */

#include "binding.h"
#include "fused.h"

#define FUSED_PLAN "torch_nnapi.fused_program"

typedef struct {
    tnn_fused_program program;
    ptrdiff_t output_count;
} Plan;

static void free_plan(Plan *plan) {
    if (!plan) return;
    free(plan->program.input);
    free(plan->program.register_vector);
    free(plan->program.code);
    free(plan);
}

static void free_plan_capsule(PyObject *capsule) {
    free_plan(PyCapsule_GetPointer(capsule, FUSED_PLAN));
}

/* A tuple of at most `limit` non-negative integers into `out`; returns its length or -1. */
static Py_ssize_t parse_sizes(PyObject *tuple, ptrdiff_t *out, Py_ssize_t limit,
                              const char *what) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) > limit) {
        PyErr_Format(PyExc_ValueError, "%s: a tuple of at most %zd integers expected", what, limit);
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(tuple); k++) {
        Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, k));
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative value", what);
            return -1;
        }
        out[k] = v;
    }
    return PyTuple_GET_SIZE(tuple);
}

/* count zeroed items of `size` bytes (at least one, so that calloc never returns NULL for
 * an empty list); NULL with MemoryError set when memory runs out. */
static void *zeroed_items(int count, size_t size) {
    void *items = calloc((size_t)(count ? count : 1), size);
    if (!items) PyErr_NoMemory();
    return items;
}

static int parse_inputs(PyObject *list, tnn_fused_program *p) {
    p->inputs = (int)PyTuple_GET_SIZE(list);
    p->input = zeroed_items(p->inputs, sizeof *p->input);
    if (!p->input) return -1;
    for (int s = 0; s < p->inputs; s++) {
        tnn_fused_input *in = &p->input[s];
        PyObject *strides;
        Py_ssize_t count;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(list, s), "npO!;fused input: (count, vector,"
                              " strides)", &count, &in->vector, &PyTuple_Type, &strides))
            return -1;
        if (parse_sizes(strides, in->strides, TNN_FUSED_MAX_OUTER, "fused input strides") !=
            p->outer_rank) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "fused input: one stride per outer dimension");
            return -1;
        }
        ptrdiff_t reach = in->vector ? p->inner - 1 : 0;
        for (int k = 0; k < p->outer_rank; k++) reach += (p->outer[k] - 1) * in->strides[k];
        if (count < 1 || reach >= count) {
            PyErr_SetString(PyExc_ValueError, "fused input: strides reach past the input");
            return -1;
        }
        in->count = count;
    }
    return 0;
}

static int parse_code(PyObject *list, tnn_fused_program *p) {
    p->length = (int)PyTuple_GET_SIZE(list);
    p->code = zeroed_items(p->length, sizeof *p->code);
    if (!p->code) return -1;
    for (int c = 0; c < p->length; c++) {
        tnn_fused_instruction *in = &p->code[c];
        PyObject *constants = NULL;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(list, c), "iiiiff|O!i;fused instruction: (op,"
                              " dst, a, b, lo, hi[, constants[, c]])", &in->op, &in->dst,
                              &in->a, &in->b, &in->lo, &in->hi, &PyTuple_Type, &constants,
                              &in->c))
            return -1;
        Py_ssize_t count = constants ? PyTuple_GET_SIZE(constants) : 0;
        if (count > TNN_FUSED_CONSTANTS) {
            PyErr_Format(PyExc_ValueError, "fused instruction %d: more than %d constants", c,
                         TNN_FUSED_CONSTANTS);
            return -1;
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            double value = PyFloat_AsDouble(PyTuple_GET_ITEM(constants, i));
            if (value == -1.0 && PyErr_Occurred()) return -1;
            in->k[i] = (float)value;
        }
    }
    return 0;
}

/* fused_plan(outer, inner, chunk, inputs, register_vector, output_vector, code) */
static PyObject *fused_plan(PyObject *self, PyObject *args) {
    PyObject *outer, *inputs, *code;
    Py_buffer kinds;
    Py_ssize_t inner, chunk;
    int output_vector;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!nnO!y*pO!", &PyTuple_Type, &outer, &inner, &chunk,
                          &PyTuple_Type, &inputs, &kinds, &output_vector, &PyTuple_Type, &code))
        return NULL;
    Plan *plan = calloc(1, sizeof *plan);
    if (!plan) {
        PyBuffer_Release(&kinds);
        return PyErr_NoMemory();
    }
    tnn_fused_program *p = &plan->program;
    p->inner = inner;
    p->chunk = chunk;
    p->output_vector = output_vector;
    p->registers = (int)kinds.len;
    p->register_vector = malloc((size_t)(kinds.len ? kinds.len : 1));
    if (p->register_vector) memcpy(p->register_vector, kinds.buf, (size_t)kinds.len);
    PyBuffer_Release(&kinds);
    Py_ssize_t rank = parse_sizes(outer, p->outer, TNN_FUSED_MAX_OUTER, "fused outer shape");
    if (!p->register_vector || rank < 0 ||
        (p->outer_rank = (int)rank, parse_inputs(inputs, p) < 0) || parse_code(code, p) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        free_plan(plan);
        return NULL;
    }
    const char *problem = tnn_fused_check(p);
    if (problem) {
        PyErr_Format(PyExc_ValueError, "fused program: %s", problem);
        free_plan(plan);
        return NULL;
    }
    plan->output_count = output_vector ? inner : 1;
    for (int k = 0; k < p->outer_rank; k++) plan->output_count *= p->outer[k];
    PyObject *capsule = PyCapsule_New(plan, FUSED_PLAN, free_plan_capsule);
    if (!capsule) free_plan(plan);
    return capsule;
}

/* fused_run(plan, out, *inputs) */
static PyObject *fused_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "fused_run(plan, out, *inputs)");
        return NULL;
    }
    Plan *plan = PyCapsule_GetPointer(args[0], FUSED_PLAN);
    if (!plan) return NULL;
    const tnn_fused_program *p = &plan->program;
    if (nargs - 2 != p->inputs) {
        PyErr_Format(PyExc_ValueError, "fused_run: %d inputs expected, got %zd", p->inputs,
                     nargs - 2);
        return NULL;
    }
    Buffer stack[16];
    const float *stack_pointers[16];
    Buffer *buf = nargs <= 16 ? stack : calloc((size_t)nargs, sizeof *buf);
    const float **pointers = nargs <= 16 ? stack_pointers
                                         : calloc((size_t)nargs, sizeof *pointers);
    if (!buf || !pointers) {
        if (buf != stack) free(buf);
        if (pointers != stack_pointers) free(pointers);
        return PyErr_NoMemory();
    }
    int held = 0, ok = tnn_get_buffer(args[1], &buf[0], 4, plan->output_count, 1, "output") == 0;
    held = 1;
    for (int s = 0; ok && s < p->inputs; s++, held++) {
        ok = tnn_get_buffer(args[s + 2], &buf[s + 1], 4, p->input[s].count, 0, "input") == 0;
        pointers[s] = buf[s + 1].view.buf;
    }
    int failed = 0;
    if (ok) {
        float *out = buf[0].view.buf;
        Py_BEGIN_ALLOW_THREADS
        failed = tnn_fused_run(p, pointers, out);
        Py_END_ALLOW_THREADS
    }
    tnn_release(buf, held);
    if (buf != stack) free(buf);
    if (pointers != stack_pointers) free(pointers);
    if (!ok) return NULL;
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyMethodDef tnn_fused_methods[] = {
    {"fused_plan", fused_plan, METH_VARARGS,
     "fused_plan(outer, inner, chunk, inputs, register_vector, output_vector, code) -> plan"},
    {"fused_run", (PyCFunction)(void (*)(void))fused_run, METH_FASTCALL,
     "fused_run(plan, out, *inputs): runs a fused element-wise program"},
    {NULL, NULL, 0, NULL},
};
