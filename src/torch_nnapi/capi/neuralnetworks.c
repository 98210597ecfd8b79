/* libneuralnetworks.so for Linux: the NNAPI C API of Android 11 over torch-nnapi's runtime.
 *
 * Every function forwards its arguments unchanged (pointers as integers) to the function of
 * the same name, in snake case, of the Python module torch_nnapi.capi.bridge, and returns the
 * result code that function returns. The bridge validates, keeps the objects and reads and
 * writes the caller's memory; this file only finds Python and calls it.
 *
 * The CPython C API is resolved at run time, never linked, so that the library neither drags
 * a second interpreter into a Python process nor leaves undefined symbols that would stop
 * `cc prog.c -lneuralnetworks`:
 *   - inside a Python process it uses the running interpreter (its symbols are global);
 *   - in any other process it finds the Python environment it is installed in (locating
 *     itself with dladdr, then walking up from its site-packages to a venv's pyvenv.cfg or a
 *     prefix's bin/pythonX.Y), loads that Python's libpython and starts an interpreter whose
 *     program is the environment's python, so that torch_nnapi and numpy are found there.
 *     The Python that built the library is the fallback: a wheel built in one venv keeps
 *     working when installed in another and the first one is deleted.
 * Each call holds the GIL (PyGILState_Ensure) only while it runs, so any thread may call.
 *
 * environment.c finds that Python (TORCH_NNAPI_LIBPYTHON and TORCH_NNAPI_PYTHON override
 * it). */

#include <Python.h> /* for types and struct layouts only: no libpython symbol is referenced */

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "NeuralNetworks.h"
#include "environment.h"

#define BRIDGE_MODULE "torch_nnapi.capi.bridge"
/* The most dimensions an operand may have: nnapi.codes.MAX_RANK (a test checks they agree). */
#define TNN_MAX_RANK 6
#define PACKAGE_SUFFIX "/torch_nnapi/capi/libneuralnetworks.so"

/* ------------------------------------------------------------------ finding Python */

static struct {
    int (*IsInitialized)(void);
    int (*IsFinalizing)(void);
    PyGILState_STATE (*GILStateEnsure)(void);
    void (*GILStateRelease)(PyGILState_STATE);
    PyObject *(*ImportModule)(const char *);
    PyObject *(*GetAttrString)(PyObject *, const char *);
    PyObject *(*CallObject)(PyObject *, PyObject *);
    PyObject *(*VaBuildValue)(const char *, va_list);
    long (*LongAsLong)(PyObject *);
    PyObject *(*ErrOccurred)(void);
    void (*ErrPrint)(void);
    void (*ErrClear)(void);
    void (*DecRef)(PyObject *);
    PyObject *(*SysGetObject)(const char *);
    PyObject *(*DecodeFSDefault)(const char *);
    int (*ListAppend)(PyObject *, PyObject *);
    /* Only to start an interpreter in a process that is not Python. */
    void (*ConfigInitPythonConfig)(PyConfig *);
    PyStatus (*ConfigSetBytesString)(PyConfig *, wchar_t **, const char *);
    PyStatus (*InitializeFromConfig)(const PyConfig *);
    void (*ConfigClear)(PyConfig *);
    int (*StatusException)(PyStatus);
    PyThreadState *(*EvalSaveThread)(void);
} py;

static const struct {
    const char *name;
    void **slot;
} symbols[] = {
    {"Py_IsInitialized", (void **)&py.IsInitialized},
    {"PyGILState_Ensure", (void **)&py.GILStateEnsure},
    {"PyGILState_Release", (void **)&py.GILStateRelease},
    {"PyImport_ImportModule", (void **)&py.ImportModule},
    {"PyObject_GetAttrString", (void **)&py.GetAttrString},
    {"PyObject_CallObject", (void **)&py.CallObject},
    {"Py_VaBuildValue", (void **)&py.VaBuildValue},
    {"PyLong_AsLong", (void **)&py.LongAsLong},
    {"PyErr_Occurred", (void **)&py.ErrOccurred},
    {"PyErr_Print", (void **)&py.ErrPrint},
    {"PyErr_Clear", (void **)&py.ErrClear},
    {"Py_DecRef", (void **)&py.DecRef},
    {"PySys_GetObject", (void **)&py.SysGetObject},
    {"PyUnicode_DecodeFSDefault", (void **)&py.DecodeFSDefault},
    {"PyList_Append", (void **)&py.ListAppend},
    {"PyConfig_InitPythonConfig", (void **)&py.ConfigInitPythonConfig},
    {"PyConfig_SetBytesString", (void **)&py.ConfigSetBytesString},
    {"Py_InitializeFromConfig", (void **)&py.InitializeFromConfig},
    {"PyConfig_Clear", (void **)&py.ConfigClear},
    {"PyStatus_Exception", (void **)&py.StatusException},
    {"PyEval_SaveThread", (void **)&py.EvalSaveThread},
};

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static int resolved;              /* all symbols found and an interpreter running */
static PyObject *bridge;          /* the bridge module, imported under the GIL */
static int bridge_failed;         /* its import failed once (reported then) */

static void report(const char *problem, const char *detail)
{
    fprintf(stderr, "libneuralnetworks (torch-nnapi): %s%s%s\n", problem, detail ? ": " : "",
            detail ? detail : "");
}

static int resolve_symbols(void *library)
{
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        *symbols[i].slot = dlsym(library, symbols[i].name);
        if (!*symbols[i].slot) {
            report("the Python library lacks", symbols[i].name);
            return 0;
        }
    }
    /* Absent before 3.13 under this name; without it, calls at exit are not guarded. */
    *(void **)&py.IsFinalizing = dlsym(library, "Py_IsFinalizing");
    if (!py.IsFinalizing)
        *(void **)&py.IsFinalizing = dlsym(library, "_Py_IsFinalizing");
    return 1;
}

/* Starts Python in a process that is not Python, as the Python that built the library. */
static int start_interpreter(void)
{
    PyConfig config;
    py.ConfigInitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the signals belong to the host program */
    config.parse_argv = 0;
    const char *program = tnn_python_program();
    PyStatus status = {0};
    if (access(program, X_OK) == 0) /* gone: let Python find its defaults */
        status = py.ConfigSetBytesString(&config, &config.program_name, program);
    if (!py.StatusException(status))
        status = py.InitializeFromConfig(&config);
    py.ConfigClear(&config);
    if (py.StatusException(status)) {
        report("cannot start Python", status.err_msg);
        return 0;
    }
    py.EvalSaveThread(); /* release the GIL; every call takes it back for its duration */
    return 1;
}

static void resolve(void)
{
    void *library = RTLD_DEFAULT;
    int (*running)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (!running || !running()) {
        const char *path = tnn_python_library();
        library = dlopen(path, RTLD_NOW | RTLD_GLOBAL); /* GLOBAL: extension modules need it */
        if (!library) {
            report("cannot load the Python library", dlerror());
            return;
        }
    }
    if (!resolve_symbols(library))
        return;
    resolved = py.IsInitialized() || start_interpreter();
}

static int python_available(void)
{
    pthread_once(&resolve_once, resolve);
    return resolved && py.IsInitialized() && !(py.IsFinalizing && py.IsFinalizing());
}

/* Adds the directory holding the torch_nnapi package this library belongs to to sys.path,
 * for when the interpreter's own environment does not provide it. */
static void add_package_root(void)
{
    Dl_info info;
    if (!dladdr((void *)&ANeuralNetworksModel_create, &info) || !info.dli_fname)
        return;
    size_t length = strlen(info.dli_fname), suffix = strlen(PACKAGE_SUFFIX);
    if (length <= suffix || strcmp(info.dli_fname + length - suffix, PACKAGE_SUFFIX) != 0)
        return;
    char *root = strndup(info.dli_fname, length - suffix);
    PyObject *path = py.SysGetObject("path"); /* borrowed */
    PyObject *entry = root ? py.DecodeFSDefault(root) : NULL;
    if (path && entry)
        py.ListAppend(path, entry);
    py.DecRef(entry);
    free(root);
    py.ErrClear();
}

/* The bridge module; call with the GIL held. */
static PyObject *bridge_module(void)
{
    if (bridge || bridge_failed)
        return bridge;
    PyObject *module = py.ImportModule(BRIDGE_MODULE);
    if (!module) {
        py.ErrClear();
        add_package_root();
        module = py.ImportModule(BRIDGE_MODULE);
    }
    if (!module) {
        report("cannot import " BRIDGE_MODULE, NULL);
        py.ErrPrint();
        bridge_failed = 1;
    } else if (bridge) {
        py.DecRef(module); /* another thread imported it meanwhile */
    } else {
        bridge = module;
    }
    return bridge;
}

/* Calls bridge.<function>(*Py_BuildValue(format, ...)) and returns its integer result. */
static int call(const char *function, const char *format, ...)
{
    if (!python_available())
        return ANEURALNETWORKS_OP_FAILED;
    int result = ANEURALNETWORKS_OP_FAILED;
    PyGILState_STATE gil = py.GILStateEnsure();
    PyObject *module = bridge_module();
    if (module) {
        va_list arguments;
        va_start(arguments, format);
        PyObject *args = py.VaBuildValue(format, arguments);
        va_end(arguments);
        PyObject *callee = args ? py.GetAttrString(module, function) : NULL;
        PyObject *value = callee ? py.CallObject(callee, args) : NULL;
        if (value)
            result = (int)py.LongAsLong(value);
        if (py.ErrOccurred()) { /* a bug in the bridge: show it, never crash */
            py.ErrPrint();
            result = ANEURALNETWORKS_OP_FAILED;
        }
        py.DecRef(value);
        py.DecRef(callee);
        py.DecRef(args);
    }
    py.GILStateRelease(gil);
    return result;
}

/* A dimensionCount above TNN_MAX_RANK is refused before anything reads the dimensions array
 * it describes: a corrupted model file can make a caller pass 2^31 with a 16-byte array. */
static int too_many_dimensions(const char *function, const ANeuralNetworksOperandType *type)
{
    if (!type || type->dimensionCount <= TNN_MAX_RANK)
        return 0;
    char message[128];
    snprintf(message, sizeof message,
             "type->dimensionCount %u is more than the %d any NNAPI operation takes",
             (unsigned)type->dimensionCount, TNN_MAX_RANK);
    call("refuse_call", "(ss)", function, message);
    return 1;
}

/* ------------------------------------------------------------------ the API */

#define PTR(p) ((unsigned long long)(uintptr_t)(p))
#define SIZE(n) ((unsigned long long)(n))

/* Out-arguments of the creating functions are NULL on failure, even when Python is absent. */
#define CLEAR(out) do { if (out) *(out) = NULL; } while (0)

int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                       ANeuralNetworksMemory **memory)
{
    CLEAR(memory);
    return call("memory_create_from_fd", "(KiiKK)", SIZE(size), protect, fd, SIZE(offset),
                PTR(memory));
}

int ANeuralNetworksMemory_createFromAHardwareBuffer(const AHardwareBuffer *ahwb,
                                                    ANeuralNetworksMemory **memory)
{
    CLEAR(memory);
    return call("memory_create_from_ahardware_buffer", "(KK)", PTR(ahwb), PTR(memory));
}

void ANeuralNetworksMemory_free(ANeuralNetworksMemory *memory)
{
    if (memory)
        call("memory_free", "(K)", PTR(memory));
}

int ANeuralNetworksMemoryDesc_create(ANeuralNetworksMemoryDesc **desc)
{
    CLEAR(desc);
    return call("memory_desc_create", "(K)", PTR(desc));
}

void ANeuralNetworksMemoryDesc_free(ANeuralNetworksMemoryDesc *desc)
{
    if (desc)
        call("memory_desc_free", "(K)", PTR(desc));
}

int ANeuralNetworksMemoryDesc_addInputRole(ANeuralNetworksMemoryDesc *desc,
                                           const ANeuralNetworksCompilation *compilation,
                                           uint32_t index, float frequency)
{
    return call("memory_desc_add_input_role", "(KKId)", PTR(desc), PTR(compilation), index,
                (double)frequency);
}

int ANeuralNetworksMemoryDesc_addOutputRole(ANeuralNetworksMemoryDesc *desc,
                                            const ANeuralNetworksCompilation *compilation,
                                            uint32_t index, float frequency)
{
    return call("memory_desc_add_output_role", "(KKId)", PTR(desc), PTR(compilation), index,
                (double)frequency);
}

int ANeuralNetworksMemoryDesc_setDimensions(ANeuralNetworksMemoryDesc *desc, uint32_t rank,
                                            const uint32_t *dimensions)
{
    return call("memory_desc_set_dimensions", "(KIK)", PTR(desc), rank, PTR(dimensions));
}

int ANeuralNetworksMemoryDesc_finish(ANeuralNetworksMemoryDesc *desc)
{
    return call("memory_desc_finish", "(K)", PTR(desc));
}

int ANeuralNetworksMemory_createFromDesc(const ANeuralNetworksMemoryDesc *desc,
                                         ANeuralNetworksMemory **memory)
{
    CLEAR(memory);
    return call("memory_create_from_desc", "(KK)", PTR(desc), PTR(memory));
}

int ANeuralNetworksMemory_copy(const ANeuralNetworksMemory *src, const ANeuralNetworksMemory *dst)
{
    return call("memory_copy", "(KK)", PTR(src), PTR(dst));
}

int ANeuralNetworksModel_create(ANeuralNetworksModel **model)
{
    CLEAR(model);
    return call("model_create", "(K)", PTR(model));
}

void ANeuralNetworksModel_free(ANeuralNetworksModel *model)
{
    if (model)
        call("model_free", "(K)", PTR(model));
}

int ANeuralNetworksModel_finish(ANeuralNetworksModel *model)
{
    return call("model_finish", "(K)", PTR(model));
}

int ANeuralNetworksModel_addOperand(ANeuralNetworksModel *model,
                                    const ANeuralNetworksOperandType *type)
{
    if (too_many_dimensions(__func__, type))
        return ANEURALNETWORKS_BAD_DATA;
    return call("model_add_operand", "(KK)", PTR(model), PTR(type));
}

int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel *model, int32_t index,
                                         const void *buffer, size_t length)
{
    return call("model_set_operand_value", "(KiKK)", PTR(model), index, PTR(buffer),
                SIZE(length));
}

int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel *model, int32_t index,
    const ANeuralNetworksSymmPerChannelQuantParams *channelQuant)
{
    return call("model_set_operand_symm_per_channel_quant_params", "(KiK)", PTR(model), index,
                PTR(channelQuant));
}

int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel *model, int32_t index,
                                                   const ANeuralNetworksMemory *memory,
                                                   size_t offset, size_t length)
{
    return call("model_set_operand_value_from_memory", "(KiKKK)", PTR(model), index,
                PTR(memory), SIZE(offset), SIZE(length));
}

int ANeuralNetworksModel_setOperandValueFromModel(ANeuralNetworksModel *model, int32_t index,
                                                  const ANeuralNetworksModel *value)
{
    return call("model_set_operand_value_from_model", "(KiK)", PTR(model), index, PTR(value));
}

int ANeuralNetworksModel_addOperation(ANeuralNetworksModel *model,
                                      ANeuralNetworksOperationType type, uint32_t inputCount,
                                      const uint32_t *inputs, uint32_t outputCount,
                                      const uint32_t *outputs)
{
    return call("model_add_operation", "(KiIKIK)", PTR(model), type, inputCount, PTR(inputs),
                outputCount, PTR(outputs));
}

int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel *model,
                                                  uint32_t inputCount, const uint32_t *inputs,
                                                  uint32_t outputCount, const uint32_t *outputs)
{
    return call("model_identify_inputs_and_outputs", "(KIKIK)", PTR(model), inputCount,
                PTR(inputs), outputCount, PTR(outputs));
}

int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel *model,
                                                          bool allow)
{
    return call("model_relax_computation_float32to_float16", "(Ki)", PTR(model), (int)allow);
}

int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel *model, const ANeuralNetworksDevice *const *devices,
    uint32_t numDevices, bool *supportedOps)
{
    return call("model_get_supported_operations_for_devices", "(KKIK)", PTR(model),
                PTR(devices), numDevices, PTR(supportedOps));
}

int ANeuralNetworksCompilation_create(ANeuralNetworksModel *model,
                                      ANeuralNetworksCompilation **compilation)
{
    CLEAR(compilation);
    return call("compilation_create", "(KK)", PTR(model), PTR(compilation));
}

int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel *model,
                                                const ANeuralNetworksDevice *const *devices,
                                                uint32_t numDevices,
                                                ANeuralNetworksCompilation **compilation)
{
    CLEAR(compilation);
    return call("compilation_create_for_devices", "(KKIK)", PTR(model), PTR(devices),
                numDevices, PTR(compilation));
}

void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation *compilation)
{
    if (compilation)
        call("compilation_free", "(K)", PTR(compilation));
}

int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation *compilation,
                                             int32_t preference)
{
    return call("compilation_set_preference", "(Ki)", PTR(compilation), preference);
}

int ANeuralNetworksCompilation_setCaching(ANeuralNetworksCompilation *compilation,
                                          const char *cacheDir, const uint8_t *token)
{
    return call("compilation_set_caching", "(KKK)", PTR(compilation), PTR(cacheDir),
                PTR(token));
}

int ANeuralNetworksCompilation_setPriority(ANeuralNetworksCompilation *compilation, int priority)
{
    return call("compilation_set_priority", "(Ki)", PTR(compilation), priority);
}

int ANeuralNetworksCompilation_setTimeout(ANeuralNetworksCompilation *compilation,
                                          uint64_t duration)
{
    return call("compilation_set_timeout", "(KK)", PTR(compilation), SIZE(duration));
}

int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation *compilation)
{
    return call("compilation_finish", "(K)", PTR(compilation));
}

int ANeuralNetworksExecution_create(ANeuralNetworksCompilation *compilation,
                                    ANeuralNetworksExecution **execution)
{
    CLEAR(execution);
    return call("execution_create", "(KK)", PTR(compilation), PTR(execution));
}

void ANeuralNetworksExecution_free(ANeuralNetworksExecution *execution)
{
    if (execution)
        call("execution_free", "(K)", PTR(execution));
}

int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution *execution, int32_t index,
                                      const ANeuralNetworksOperandType *type, const void *buffer,
                                      size_t length)
{
    if (too_many_dimensions(__func__, type))
        return ANEURALNETWORKS_BAD_DATA;
    return call("execution_set_input", "(KiKKK)", PTR(execution), index, PTR(type), PTR(buffer),
                SIZE(length));
}

int ANeuralNetworksExecution_setInputFromMemory(ANeuralNetworksExecution *execution,
                                                int32_t index,
                                                const ANeuralNetworksOperandType *type,
                                                const ANeuralNetworksMemory *memory,
                                                size_t offset, size_t length)
{
    if (too_many_dimensions(__func__, type))
        return ANEURALNETWORKS_BAD_DATA;
    return call("execution_set_input_from_memory", "(KiKKKK)", PTR(execution), index, PTR(type),
                PTR(memory), SIZE(offset), SIZE(length));
}

int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution *execution, int32_t index,
                                       const ANeuralNetworksOperandType *type, void *buffer,
                                       size_t length)
{
    if (too_many_dimensions(__func__, type))
        return ANEURALNETWORKS_BAD_DATA;
    return call("execution_set_output", "(KiKKK)", PTR(execution), index, PTR(type),
                PTR(buffer), SIZE(length));
}

int ANeuralNetworksExecution_setOutputFromMemory(ANeuralNetworksExecution *execution,
                                                 int32_t index,
                                                 const ANeuralNetworksOperandType *type,
                                                 const ANeuralNetworksMemory *memory,
                                                 size_t offset, size_t length)
{
    if (too_many_dimensions(__func__, type))
        return ANEURALNETWORKS_BAD_DATA;
    return call("execution_set_output_from_memory", "(KiKKKK)", PTR(execution), index,
                PTR(type), PTR(memory), SIZE(offset), SIZE(length));
}

int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution *execution,
                                          ANeuralNetworksEvent **event)
{
    CLEAR(event);
    return call("execution_start_compute", "(KK)", PTR(execution), PTR(event));
}

int ANeuralNetworksExecution_startComputeWithDependencies(
    ANeuralNetworksExecution *execution, const ANeuralNetworksEvent *const *dependencies,
    uint32_t num_dependencies, uint64_t duration, ANeuralNetworksEvent **event)
{
    CLEAR(event);
    return call("execution_start_compute_with_dependencies", "(KKIKK)", PTR(execution),
                PTR(dependencies), num_dependencies, SIZE(duration), PTR(event));
}

int ANeuralNetworksExecution_compute(ANeuralNetworksExecution *execution)
{
    return call("execution_compute", "(K)", PTR(execution));
}

int ANeuralNetworksExecution_burstCompute(ANeuralNetworksExecution *execution,
                                          ANeuralNetworksBurst *burst)
{
    return call("execution_burst_compute", "(KK)", PTR(execution), PTR(burst));
}

int ANeuralNetworksExecution_getOutputOperandRank(ANeuralNetworksExecution *execution,
                                                  int32_t index, uint32_t *rank)
{
    return call("execution_get_output_operand_rank", "(KiK)", PTR(execution), index, PTR(rank));
}

int ANeuralNetworksExecution_getOutputOperandDimensions(ANeuralNetworksExecution *execution,
                                                        int32_t index, uint32_t *dimensions)
{
    return call("execution_get_output_operand_dimensions", "(KiK)", PTR(execution), index,
                PTR(dimensions));
}

int ANeuralNetworksExecution_setMeasureTiming(ANeuralNetworksExecution *execution, bool measure)
{
    return call("execution_set_measure_timing", "(Ki)", PTR(execution), (int)measure);
}

int ANeuralNetworksExecution_getDuration(const ANeuralNetworksExecution *execution,
                                         int32_t durationCode, uint64_t *duration)
{
    return call("execution_get_duration", "(KiK)", PTR(execution), durationCode, PTR(duration));
}

int ANeuralNetworksExecution_setTimeout(ANeuralNetworksExecution *execution, uint64_t duration)
{
    return call("execution_set_timeout", "(KK)", PTR(execution), SIZE(duration));
}

int ANeuralNetworksExecution_setLoopTimeout(ANeuralNetworksExecution *execution, uint64_t duration)
{
    return call("execution_set_loop_timeout", "(KK)", PTR(execution), SIZE(duration));
}

/* The two loop timeouts live in the runtime: the bridge writes them to a local. */
uint64_t ANeuralNetworks_getDefaultLoopTimeout(void)
{
    uint64_t value = 0;
    call("get_default_loop_timeout", "(K)", PTR(&value));
    return value;
}

uint64_t ANeuralNetworks_getMaximumLoopTimeout(void)
{
    uint64_t value = 0;
    call("get_maximum_loop_timeout", "(K)", PTR(&value));
    return value;
}

int ANeuralNetworksBurst_create(ANeuralNetworksCompilation *compilation,
                                ANeuralNetworksBurst **burst)
{
    CLEAR(burst);
    return call("burst_create", "(KK)", PTR(compilation), PTR(burst));
}

void ANeuralNetworksBurst_free(ANeuralNetworksBurst *burst)
{
    if (burst)
        call("burst_free", "(K)", PTR(burst));
}

int ANeuralNetworksEvent_wait(ANeuralNetworksEvent *event)
{
    return call("event_wait", "(K)", PTR(event));
}

void ANeuralNetworksEvent_free(ANeuralNetworksEvent *event)
{
    if (event)
        call("event_free", "(K)", PTR(event));
}

int ANeuralNetworksEvent_createFromSyncFenceFd(int sync_fence_fd, ANeuralNetworksEvent **event)
{
    CLEAR(event);
    return call("event_create_from_sync_fence_fd", "(iK)", sync_fence_fd, PTR(event));
}

int ANeuralNetworksEvent_getSyncFenceFd(const ANeuralNetworksEvent *event, int *sync_fence_fd)
{
    if (sync_fence_fd)
        *sync_fence_fd = -1; /* -1 whenever there is no descriptor to give */
    return call("event_get_sync_fence_fd", "(KK)", PTR(event), PTR(sync_fence_fd));
}

int ANeuralNetworks_getDeviceCount(uint32_t *numDevices)
{
    return call("get_device_count", "(K)", PTR(numDevices));
}

int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice **device)
{
    return call("get_device", "(IK)", devIndex, PTR(device));
}

int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice *device, const char **name)
{
    return call("device_get_name", "(KK)", PTR(device), PTR(name));
}

int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice *device, int32_t *type)
{
    return call("device_get_type", "(KK)", PTR(device), PTR(type));
}

int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice *device, const char **version)
{
    return call("device_get_version", "(KK)", PTR(device), PTR(version));
}

int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice *device,
                                          int64_t *featureLevel)
{
    return call("device_get_feature_level", "(KK)", PTR(device), PTR(featureLevel));
}

int ANeuralNetworksDevice_wait(const ANeuralNetworksDevice *device)
{
    return call("device_wait", "(K)", PTR(device));
}
