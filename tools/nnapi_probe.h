/* nnapi_probe's parts (nnapi_probe.c: the library and main; nnapi_probe_model.c: the probe
 * model file; nnapi_probe_profile.c: the profile it writes). Build them together:
 *   cc -std=c99 -O2 tools/nnapi_probe*.c -ldl -lm -o nnapi_probe
 */
#ifndef NNAPI_PROBE_H
#define NNAPI_PROBE_H

#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { EXIT_OK = 0, EXIT_USAGE = 4, EXIT_BAD_FILE = 5, EXIT_CANNOT_WRITE = 6,
       EXIT_RUN_FAILED = 7 };

/* One line on stderr, "nnapi_probe: ...", then exit(code). */
void fail(int code, const char* format, ...);
/* A bad command line: the problem and the usage, exit 4. */
void usage(const char* problem);
/* calloc, or exit 7 saying out of memory. */
void* allocate(size_t count, size_t size);

/* ---------------------------------------------------------------- the model file */

typedef struct {
    int32_t code;
    char name[48];
    float scale;
    int32_t zero_point;
    uint32_t rank;
    uint32_t* dims;
    bool constant, omitted, shown; /* shown: the value's bytes were written */
    unsigned char* data;
    size_t size;
    uint32_t channel_dim, channel_count;
    float* channel_scales;
} Operand;

typedef struct {
    int32_t code;
    char name[48];
    uint32_t input_count, output_count;
    uint32_t *inputs, *outputs;
} Operation;

typedef struct {
    const char* path;
    bool relax;
    uint32_t operand_count, operation_count, input_count, output_count;
    Operand* operands;
    Operation* operations;
    uint32_t *inputs, *outputs;
} ProbeModel;

/* Reads a probe model file (docs/device_profiles.md), exiting 5 with "path:line: problem". */
void read_model(const char* path, ProbeModel* m);

/* ---------------------------------------------------------------- the profile */

typedef struct {
    char* conditions;
    bool supported;
    const char* where; /* model file and operation, for the conflict warning */
    uint32_t operation;
} Rule;

typedef struct {
    const char* name;
    const char* version;
    int32_t type;
    int64_t feature_level;
    Rule* rules;
    size_t rule_count, probed, supported;
} DeviceAnswers;

enum { TYPE_COUNT = 15 }; /* the operand types a profile's operandPerformance names */

typedef struct {
    double exec_time, power_usage;
    bool given;
} Performance;

typedef struct {
    Performance fallback; /* no WHAT: the types not named, and relaxed/if/while not given */
    Performance per_type[TYPE_COUNT], relaxed, if_, while_;
} CapabilityOptions;

/* The rule's conditions for operation op of m (JSON, malloc'ed). */
char* conditions(const ProbeModel* m, const Operation* op);
/* Records a device's answer for one probed operation (text: conditions(...), taken). */
void add_rule(DeviceAnswers* d, char* text, bool supported, const char* where,
              uint32_t operation);
/* ACCELERATOR, GPU, CPU or OTHER for a device type code. */
const char* type_name(int32_t type);
/* --performance [WHAT=]EXEC,POWER into c; a usage error otherwise. */
void read_performance(CapabilityOptions* c, const char* value);
bool any_performance(const CapabilityOptions* c);
/* Writes DIR/<device name>.json, exiting 6 when it cannot. */
void write_profile(const DeviceAnswers* d, const char* dir, const char* library,
                   const CapabilityOptions* capabilities);

#endif
