/* torch_nnapi.runtime.native._kernels: the Python binding of the native kernels.
 *
 * One method table per family (bind_*.c), gathered here; the
 * typed Python wrappers in runtime/native (one module per family) are the intended callers.
 * Plans (packed weights) are capsules freed with their last reference. */

#include "binding.h"

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

/* ------------------------------------------------------------------ NumPy's BLAS */

static PyObject *set_sgemm(PyObject *self, PyObject *args) {
    unsigned long long address;
    int ilp64;
    (void)self;
    if (!PyArg_ParseTuple(args, "Kp", &address, &ilp64)) return NULL;
    tnn_set_sgemm((void *)(uintptr_t)address, ilp64);
    Py_RETURN_NONE;
}

static PyObject *set_onednn(PyObject *self, PyObject *args) {
    unsigned long long function, set_threads, get_threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "KKK", &function, &set_threads, &get_threads)) return NULL;
    tnn_set_onednn((void *)(uintptr_t)function, (void *)(uintptr_t)set_threads,
                   (void *)(uintptr_t)get_threads);
    Py_RETURN_NONE;
}

static PyObject *sgemm_library(PyObject *self, PyObject *args) {
    static const char *names[] = {"none", "numpy", "onednn"};
    (void)self;
    (void)args;
    return PyUnicode_FromString(names[tnn_sgemm_library()]);
}

static PyObject *has_sgemm(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyBool_FromLong(tnn_has_sgemm());
}

/* ------------------------------------------------------------------ module */

static PyMethodDef process_methods[] = {
    {"set_threads", set_threads, METH_VARARGS, "set_threads(n): threads the kernels may use"},
    {"get_threads", get_threads, METH_NOARGS, "get_threads() -> n"},
    {"set_sgemm", set_sgemm, METH_VARARGS,
     "set_sgemm(address, ilp64): the cblas_sgemm the float convolutions call (0: none)"},
    {"has_sgemm", has_sgemm, METH_NOARGS, "has_sgemm() -> whether an sgemm was given"},
    {"set_onednn", set_onednn, METH_VARARGS,
     "set_onednn(dnnl_sgemm, omp_set_num_threads, omp_get_max_threads): oneDNN's sgemm for the"
     " float convolutions, before NumPy's (0, 0, 0: none)"},
    {"sgemm_library", sgemm_library, METH_NOARGS,
     "sgemm_library() -> 'onednn', 'numpy' or 'none': what the float convolutions multiply with"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels",
                                    "torch-nnapi's native kernels (see native/__init__.py)", -1,
                                    NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernels(void) {
    PyObject *m = PyModule_Create(&module);
    PyMethodDef *tables[] = {process_methods, tnn_conv_methods, tnn_elementwise_methods,
                             tnn_pooling_methods, tnn_normalization_methods,
                             tnn_recurrent_methods, tnn_fused_methods};
    for (size_t t = 0; m && t < sizeof tables / sizeof *tables; t++)
        if (PyModule_AddFunctions(m, tables[t]) < 0) Py_CLEAR(m);
    return m;
}
