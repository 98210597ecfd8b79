/* A plain C client of libneuralnetworks.so: no Python in this program, the library starts it.
 *
 * Usage: nnapi_client add|conv|devices
 *   add      out = a + b on 6 floats, the output's size left for the runtime to tell
 *   conv     a 3x3 VALID convolution with bias and RELU over a 1x5x5x1 image (NHWC)
 *   devices  prints one line per device: name, type, feature level, version
 * Builds the model, runs it once with startCompute and then on 8 threads at once, and checks
 * every result against the same computation done here. Prints "ok" and exits 0 on success. */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "NeuralNetworks.h"

#define THREADS 8
#define RUNS 10
#define MAX_ELEMENTS 64

#define CHECK(call)                                                                          \
    do {                                                                                     \
        int code_ = (call);                                                                  \
        if (code_ != ANEURALNETWORKS_NO_ERROR) {                                             \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, code_);    \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* What differs between the two models. */
typedef struct {
    const char *name;
    ANeuralNetworksModel *(*build)(void);
    uint32_t input_count;
    uint32_t input_elements;
    uint32_t output_elements;
    void (*expected)(const float inputs[][MAX_ELEMENTS], float *out);
} Case;

static ANeuralNetworksCompilation *compilation;
static const Case *current;

static void add_operand(ANeuralNetworksModel *model, int32_t type, uint32_t rank,
                        const uint32_t *dims)
{
    ANeuralNetworksOperandType t = {type, rank, rank ? dims : NULL, 0.0f, 0};
    CHECK(ANeuralNetworksModel_addOperand(model, &t));
}

static void set_int(ANeuralNetworksModel *model, int32_t index, int32_t value)
{
    CHECK(ANeuralNetworksModel_setOperandValue(model, index, &value, sizeof value));
}

/* ------------------------------------------------------------------ ADD */

static ANeuralNetworksModel *build_add(void)
{
    ANeuralNetworksModel *model;
    uint32_t six[] = {6}, unknown[] = {0};
    CHECK(ANeuralNetworksModel_create(&model));
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 1, six);     /* 0: a */
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 1, six);     /* 1: b */
    add_operand(model, ANEURALNETWORKS_INT32, 0, NULL);             /* 2: fuse code */
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 1, unknown); /* 3: out, size open */
    set_int(model, 2, ANEURALNETWORKS_FUSED_NONE);
    uint32_t inputs[] = {0, 1, 2}, outputs[] = {3};
    CHECK(ANeuralNetworksModel_addOperation(model, ANEURALNETWORKS_ADD, 3, inputs, 1, outputs));
    CHECK(ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, inputs, 1, outputs));
    CHECK(ANeuralNetworksModel_finish(model));
    return model;
}

static void expected_add(const float inputs[][MAX_ELEMENTS], float *out)
{
    for (int i = 0; i < 6; i++)
        out[i] = inputs[0][i] + inputs[1][i];
}

/* ------------------------------------------------------------------ CONV_2D */

static const float conv_filter[9] = {1, 0, -1, 2, 0.5f, -2, 1, 0, -1};
static const float conv_bias[1] = {0.25f};

static ANeuralNetworksModel *build_conv(void)
{
    ANeuralNetworksModel *model;
    uint32_t image[] = {1, 5, 5, 1}, filter[] = {1, 3, 3, 1}, bias[] = {1}, out[] = {1, 3, 3, 1};
    CHECK(ANeuralNetworksModel_create(&model));
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 4, image);  /* 0: input */
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 4, filter); /* 1: filter */
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 1, bias);   /* 2: bias */
    for (int i = 3; i <= 6; i++)
        add_operand(model, ANEURALNETWORKS_INT32, 0, NULL); /* 3..6: padding, strides, fuse */
    add_operand(model, ANEURALNETWORKS_TENSOR_FLOAT32, 4, out); /* 7: output */
    CHECK(ANeuralNetworksModel_setOperandValue(model, 1, conv_filter, sizeof conv_filter));
    CHECK(ANeuralNetworksModel_setOperandValue(model, 2, conv_bias, sizeof conv_bias));
    set_int(model, 3, ANEURALNETWORKS_PADDING_VALID);
    set_int(model, 4, 1);
    set_int(model, 5, 1);
    set_int(model, 6, ANEURALNETWORKS_FUSED_RELU);
    uint32_t inputs[] = {0, 1, 2, 3, 4, 5, 6}, outputs[] = {7};
    CHECK(ANeuralNetworksModel_addOperation(model, ANEURALNETWORKS_CONV_2D, 7, inputs, 1,
                                            outputs));
    CHECK(ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, inputs, 1, outputs));
    CHECK(ANeuralNetworksModel_finish(model));
    return model;
}

static void expected_conv(const float inputs[][MAX_ELEMENTS], float *out)
{
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) {
            float sum = conv_bias[0];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    sum += inputs[0][(y + i) * 5 + x + j] * conv_filter[i * 3 + j];
            out[y * 3 + x] = sum > 0 ? sum : 0;
        }
}

static const Case cases[] = {
    {"add", build_add, 2, 6, 6, expected_add},
    {"conv", build_conv, 1, 25, 9, expected_conv},
};

/* ------------------------------------------------------------------ running */

/* Runs one execution on inputs made from seed; returns 0 when the result is right. */
static int run_once(unsigned seed, int asynchronous)
{
    float inputs[2][MAX_ELEMENTS], out[MAX_ELEMENTS], want[MAX_ELEMENTS];
    for (uint32_t k = 0; k < current->input_count; k++)
        for (uint32_t i = 0; i < current->input_elements; i++)
            inputs[k][i] = (float)((seed * 31u + k * 7u + i * 13u) % 17u) - 8.0f;
    memset(out, 0, sizeof out);

    ANeuralNetworksExecution *execution;
    CHECK(ANeuralNetworksExecution_create(compilation, &execution));
    for (uint32_t k = 0; k < current->input_count; k++)
        CHECK(ANeuralNetworksExecution_setInput(execution, k, NULL, inputs[k],
                                                current->input_elements * sizeof(float)));
    CHECK(ANeuralNetworksExecution_setOutput(execution, 0, NULL, out,
                                             current->output_elements * sizeof(float)));
    if (asynchronous) {
        ANeuralNetworksEvent *event;
        CHECK(ANeuralNetworksExecution_startCompute(execution, &event));
        CHECK(ANeuralNetworksEvent_wait(event));
        ANeuralNetworksEvent_free(event);
    } else {
        CHECK(ANeuralNetworksExecution_compute(execution));
    }
    uint32_t rank, dims[4], elements = 1;
    CHECK(ANeuralNetworksExecution_getOutputOperandRank(execution, 0, &rank));
    CHECK(ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims));
    ANeuralNetworksExecution_free(execution);
    for (uint32_t d = 0; d < rank; d++)
        elements *= dims[d];
    if (elements != current->output_elements) {
        fprintf(stderr, "%s: the output has %u elements, expected %u\n", current->name,
                elements, current->output_elements);
        return 1;
    }
    current->expected((const float(*)[MAX_ELEMENTS])inputs, want);
    for (uint32_t i = 0; i < elements; i++)
        if (fabsf(out[i] - want[i]) > 1e-5f * (1 + fabsf(want[i]))) {
            fprintf(stderr, "%s: seed %u, element %u: got %g, expected %g\n", current->name,
                    seed, i, out[i], want[i]);
            return 1;
        }
    return 0;
}

static void *worker(void *arg)
{
    unsigned thread = (unsigned)(size_t)arg;
    size_t failures = 0;
    for (unsigned run = 0; run < RUNS; run++)
        failures += run_once(thread * RUNS + run + 1, 0) != 0;
    return (void *)failures;
}

/* The devices the library offers (TORCH_NNAPI_DEVICES), one line each. */
static int list_devices(void)
{
    uint32_t count = 0;
    CHECK(ANeuralNetworks_getDeviceCount(&count));
    for (uint32_t i = 0; i < count; i++) {
        ANeuralNetworksDevice *device = NULL;
        const char *name = NULL, *version = NULL;
        int32_t type = 0;
        int64_t level = 0;
        CHECK(ANeuralNetworks_getDevice(i, &device));
        CHECK(ANeuralNetworksDevice_getName(device, &name));
        CHECK(ANeuralNetworksDevice_getType(device, &type));
        CHECK(ANeuralNetworksDevice_getFeatureLevel(device, &level));
        CHECK(ANeuralNetworksDevice_getVersion(device, &version));
        CHECK(ANeuralNetworksDevice_wait(device));
        printf("%s %d %lld %s\n", name, (int)type, (long long)level, version);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "devices") == 0)
        return list_devices();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (argc == 2 && strcmp(argv[1], cases[c].name) == 0)
            current = &cases[c];
    if (!current) {
        fprintf(stderr, "usage: %s add|conv|devices\n", argv[0]);
        return 2;
    }
    ANeuralNetworksModel *model = current->build();
    CHECK(ANeuralNetworksCompilation_create(model, &compilation));
    CHECK(ANeuralNetworksCompilation_setPreference(compilation,
                                                   ANEURALNETWORKS_PREFER_SUSTAINED_SPEED));
    CHECK(ANeuralNetworksCompilation_finish(compilation));

    size_t failures = run_once(0, 1) != 0;
    pthread_t threads[THREADS];
    for (size_t t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, worker, (void *)t) != 0) {
            perror("pthread_create");
            return 1;
        }
    for (size_t t = 0; t < THREADS; t++) {
        void *thread_failures;
        pthread_join(threads[t], &thread_failures);
        failures += (size_t)thread_failures;
    }
    ANeuralNetworksCompilation_free(compilation);
    ANeuralNetworksModel_free(model);
    if (failures) {
        fprintf(stderr, "%s: %zu wrong results\n", current->name, failures);
        return 1;
    }
    printf("ok %s: %d runs on %d threads\n", current->name, 1 + THREADS * RUNS, THREADS);
    return 0;
}
