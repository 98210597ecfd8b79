/*
 * nnapi_probe: what the NNAPI drivers of a phone (or of any libneuralnetworks.so) say about
 * themselves and about a model, written as torch-nnapi device profiles.
 *
 * It lists the devices (name, type, version, feature level) and, for each model file given
 * (written by `torch-nnapi inspect --probe-model`, format in docs/device_profiles.md), builds
 * the model through the NNAPI C API, asks every device which operations it supports
 * (ANeuralNetworksModel_getSupportedOperationsForDevices) and writes one profile per device,
 * DIR/<device name>.json, whose rules say exactly that for each probed operation's operand
 * types, ranks, quantization and scalar arguments. torch-nnapi's --device reads it.
 *
 * C99, libc and dlopen only, so that the NDK's clang builds it for a phone (with its two
 * companions, nnapi_probe_model.c and nnapi_probe_profile.c, and nnapi_probe.h):
 *   cc -std=c99 -O2 tools/nnapi_probe*.c -ldl -lm -o nnapi_probe
 *
 * Usage: nnapi_probe [--library PATH] [--out DIR] [--performance [WHAT=]EXEC,POWER]...
 *                    [MODEL_FILE...]
 *
 * Android's NDK API does not tell a device's Capabilities (its speed relative to the CPU):
 * the profiles get what --performance says (repeatable; WHAT is an operand type name, such
 * as TENSOR_QUANT8_ASYMM, or relaxed, if, while; without WHAT: every other operand type,
 * and relaxed, IF and WHILE unless given), by default 1.0,1.0 (the CPU's, which
 * partitioning ties go to) with a comment saying so: edit them from measurements.
 *
 * Exit codes (those of torch-nnapi): 0 success, 4 bad command line, 5 a file cannot be read or
 * is malformed (the library or a model file), 6 a profile cannot be written, 7 the library
 * rejects a call. Every error is one line on stderr.
 */
#include "nnapi_probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NNAPI ABI (NeuralNetworks.h), declared here so that no header is needed. */
typedef struct ANeuralNetworksModel ANeuralNetworksModel;
typedef struct ANeuralNetworksDevice ANeuralNetworksDevice;
typedef struct {
    int32_t type;
    uint32_t dimensionCount;
    const uint32_t* dimensions;
    float scale;
    int32_t zeroPoint;
} OperandType;
typedef struct {
    uint32_t channelDim;
    uint32_t scaleCount;
    const float* scales;
} ChannelParams;

static struct {
    int (*getDeviceCount)(uint32_t*);
    int (*getDevice)(uint32_t, ANeuralNetworksDevice**);
    int (*getName)(const ANeuralNetworksDevice*, const char**);
    int (*getType)(const ANeuralNetworksDevice*, int32_t*);
    int (*getVersion)(const ANeuralNetworksDevice*, const char**);
    int (*getFeatureLevel)(const ANeuralNetworksDevice*, int64_t*);
    int (*create)(ANeuralNetworksModel**);
    void (*free)(ANeuralNetworksModel*);
    int (*addOperand)(ANeuralNetworksModel*, const OperandType*);
    int (*setOperandValue)(ANeuralNetworksModel*, int32_t, const void*, size_t);
    int (*setChannelParams)(ANeuralNetworksModel*, int32_t, const ChannelParams*);
    int (*addOperation)(ANeuralNetworksModel*, int32_t, uint32_t, const uint32_t*, uint32_t,
                        const uint32_t*);
    int (*identify)(ANeuralNetworksModel*, uint32_t, const uint32_t*, uint32_t,
                    const uint32_t*);
    int (*relax)(ANeuralNetworksModel*, bool);
    int (*finish)(ANeuralNetworksModel*);
    int (*supported)(const ANeuralNetworksModel*, const ANeuralNetworksDevice* const*, uint32_t,
                     bool*);
} nn;

void fail(int code, const char* format, ...) {
    va_list args;
    va_start(args, format);
    fputs("nnapi_probe: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(code);
}

void* allocate(size_t count, size_t size) {
    void* memory = calloc(count ? count : 1, size ? size : 1);
    if (memory == NULL) fail(EXIT_RUN_FAILED, "out of memory");
    return memory;
}

static void load_library(const char* path) {
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) fail(EXIT_BAD_FILE, "%s: cannot be loaded (%s)", path, dlerror());
    static const char* names[] = {
        "ANeuralNetworks_getDeviceCount", "ANeuralNetworks_getDevice",
        "ANeuralNetworksDevice_getName", "ANeuralNetworksDevice_getType",
        "ANeuralNetworksDevice_getVersion", "ANeuralNetworksDevice_getFeatureLevel",
        "ANeuralNetworksModel_create", "ANeuralNetworksModel_free",
        "ANeuralNetworksModel_addOperand", "ANeuralNetworksModel_setOperandValue",
        "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams",
        "ANeuralNetworksModel_addOperation", "ANeuralNetworksModel_identifyInputsAndOutputs",
        "ANeuralNetworksModel_relaxComputationFloat32toFloat16", "ANeuralNetworksModel_finish",
        "ANeuralNetworksModel_getSupportedOperationsForDevices"};
    void** slots = (void**)&nn;  /* the struct's members, in the order of names */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        slots[i] = dlsym(library, names[i]);
        if (slots[i] == NULL)
            fail(EXIT_BAD_FILE, "%s: has no %s (an NNAPI older than Android 10?)", path,
                 names[i]);
    }
}

/* ------------------------------------------------------------------ building it */

static void check(int status, const ProbeModel* m, const char* call, const char* what,
                  uint32_t index) {
    if (status != 0)
        fail(EXIT_RUN_FAILED, "%s: the library rejects %s %u (%s returned %d)", m->path, what,
             index, call, status);
}

static ANeuralNetworksModel* build(const ProbeModel* m) {
    ANeuralNetworksModel* model = NULL;
    check(nn.create(&model), m, "ANeuralNetworksModel_create", "model", 0);
    for (uint32_t i = 0; i < m->operand_count; i++) {
        const Operand* o = &m->operands[i];
        OperandType type = {o->code, o->rank, o->rank ? o->dims : NULL, o->scale,
                            o->zero_point};
        check(nn.addOperand(model, &type), m, "ANeuralNetworksModel_addOperand", "operand", i);
    }
    for (uint32_t i = 0; i < m->operand_count; i++) {
        const Operand* o = &m->operands[i];
        if (o->channel_scales) {
            ChannelParams params = {o->channel_dim, o->channel_count, o->channel_scales};
            check(nn.setChannelParams(model, (int32_t)i, &params), m,
                  "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams", "operand", i);
        }
        if (o->constant || o->omitted)
            check(nn.setOperandValue(model, (int32_t)i, o->omitted ? NULL : o->data,
                                     o->omitted ? 0 : o->size),
                  m, "ANeuralNetworksModel_setOperandValue", "operand", i);
    }
    for (uint32_t i = 0; i < m->operation_count; i++) {
        const Operation* op = &m->operations[i];
        check(nn.addOperation(model, op->code, op->input_count, op->inputs, op->output_count,
                              op->outputs),
              m, "ANeuralNetworksModel_addOperation", "operation", i);
    }
    check(nn.identify(model, m->input_count, m->inputs, m->output_count, m->outputs), m,
          "ANeuralNetworksModel_identifyInputsAndOutputs", "model", 0);
    if (m->relax)
        check(nn.relax(model, true), m, "ANeuralNetworksModel_relaxComputationFloat32toFloat16",
              "model", 0);
    check(nn.finish(model), m, "ANeuralNetworksModel_finish", "model", 0);
    return model;
}

/* ------------------------------------------------------------------ main */

#define USAGE "usage: nnapi_probe [--library PATH] [--out DIR] [--performance" \
    " [WHAT=]EXEC,POWER]... [MODEL_FILE...]\n"

void usage(const char* problem) {
    fprintf(stderr, "nnapi_probe: %s\n" USAGE, problem);
    exit(EXIT_USAGE);
}

int main(int argc, char** argv) {
    const char *library = "libneuralnetworks.so", *out = ".";
    CapabilityOptions capabilities = {.fallback = {1.0, 1.0, false}};
    int first_model = argc;
    for (int i = 1; i < argc; i++) {
        bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "--library") == 0 || strcmp(argv[i], "--out") == 0 ||
            strcmp(argv[i], "--performance") == 0) {
            if (!has_value) usage("an option is missing its value");
            const char* value = argv[++i];
            if (argv[i - 1][2] == 'l') library = value;
            else if (argv[i - 1][2] == 'o') out = value;
            else read_performance(&capabilities, value);
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf(USAGE);
            return EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            usage("unknown option");
        } else {
            first_model = i;
            break;
        }
    }
    int model_count = argc - first_model;
    ProbeModel* models = allocate((size_t)model_count, sizeof *models);
    for (int k = 0; k < model_count; k++) read_model(argv[first_model + k], &models[k]);

    load_library(library);
    uint32_t device_count = 0;
    if (nn.getDeviceCount(&device_count) != 0)
        fail(EXIT_RUN_FAILED, "%s: ANeuralNetworks_getDeviceCount fails", library);
    ANeuralNetworksDevice** devices = allocate(device_count, sizeof *devices);
    DeviceAnswers* answers = allocate(device_count, sizeof *answers);
    for (uint32_t i = 0; i < device_count; i++) {
        DeviceAnswers* d = &answers[i];
        if (nn.getDevice(i, &devices[i]) != 0 || nn.getName(devices[i], &d->name) != 0 ||
            nn.getType(devices[i], &d->type) != 0 ||
            nn.getVersion(devices[i], &d->version) != 0 ||
            nn.getFeatureLevel(devices[i], &d->feature_level) != 0)
            fail(EXIT_RUN_FAILED, "%s: device %u does not describe itself", library, i);
        printf("device %u: %s type %s version %s feature level %lld\n", i, d->name,
               type_name(d->type), d->version, (long long)d->feature_level);
    }
    for (int k = 0; k < model_count; k++) {
        const ProbeModel* m = &models[k];
        ANeuralNetworksModel* model = build(m);
        bool* supported = allocate(m->operation_count, sizeof *supported);
        for (uint32_t i = 0; i < device_count; i++) {
            const ANeuralNetworksDevice* one[1] = {devices[i]};
            if (nn.supported(model, one, 1, supported) != 0)
                fail(EXIT_RUN_FAILED, "%s: %s: getSupportedOperationsForDevices fails", m->path,
                     answers[i].name);
            for (uint32_t j = 0; j < m->operation_count; j++)
                add_rule(&answers[i], conditions(m, &m->operations[j]), supported[j], m->path, j);
        }
        free(supported);
        nn.free(model);
    }
    for (uint32_t i = 0; i < device_count && model_count > 0; i++) {
        if (strcmp(answers[i].name, "nnapi-reference") == 0) continue; /* Android's CPU */
        write_profile(&answers[i], out, library, &capabilities);
    }
    if (model_count > 0 && !any_performance(&capabilities))
        fprintf(stderr, "nnapi_probe: note: the NDK API does not tell a device's Capabilities:"
                " the profiles say 1.0 (the CPU's); pass --performance [WHAT=]EXEC,POWER or"
                " edit them\n");
    return EXIT_OK;
}

