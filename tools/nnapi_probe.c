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
 * C99, libc and dlopen only, so that the NDK's clang builds it for a phone:
 *   cc -std=c99 -O2 tools/nnapi_probe.c -ldl -o nnapi_probe
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
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_OK = 0, EXIT_USAGE = 4, EXIT_BAD_FILE = 5, EXIT_CANNOT_WRITE = 6,
       EXIT_RUN_FAILED = 7 };

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

static void fail(int code, const char* format, ...) {
    va_list args;
    va_start(args, format);
    fputs("nnapi_probe: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(code);
}

static void* allocate(size_t count, size_t size) {
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

/* ------------------------------------------------------------------ the model file */

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

typedef struct {
    const char* path;
    int line;
    char* cursor;
} Reader;

static void malformed(const Reader* r, const char* format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "nnapi_probe: %s:%d: ", r->path, r->line);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(EXIT_BAD_FILE);
}

static char* word(Reader* r, const char* what) {
    while (*r->cursor == ' ' || *r->cursor == '\t' || *r->cursor == '\r') r->cursor++;
    if (*r->cursor == '\0') malformed(r, "%s: missing", what);
    char* start = r->cursor;
    while (*r->cursor && *r->cursor != ' ' && *r->cursor != '\t' && *r->cursor != '\r')
        r->cursor++;
    if (*r->cursor) *r->cursor++ = '\0';
    return start;
}

static long long integer(Reader* r, const char* what, long long low, long long high) {
    char* text = word(r, what);
    char* end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (*end || errno || value < low || value > high)
        malformed(r, "%s: '%s' is not an integer in [%lld, %lld]", what, text, low, high);
    return value;
}

static float number(Reader* r, const char* what) {
    char* text = word(r, what);
    char* end;
    float value = strtof(text, &end);
    if (*end || !isfinite(value)) malformed(r, "%s: '%s' is not a finite number", what, text);
    return value;
}

static void at_line_end(Reader* r) {
    while (*r->cursor == ' ' || *r->cursor == '\t' || *r->cursor == '\r') r->cursor++;
    if (*r->cursor) malformed(r, "unexpected '%s' at the end of the line", r->cursor);
}

static uint32_t operand_index(Reader* r, const ProbeModel* m, const char* what) {
    return (uint32_t)integer(r, what, 0, (long long)m->operand_count - 1);
}

static uint32_t* index_list(Reader* r, const ProbeModel* m, uint32_t* count, const char* what) {
    *count = (uint32_t)integer(r, what, 0, 1 << 20);
    uint32_t* list = allocate(*count, sizeof *list);
    for (uint32_t i = 0; i < *count; i++) list[i] = operand_index(r, m, what);
    return list;
}

static void name_of(Reader* r, char* name, const char* what) {
    char* text = word(r, what);
    if (strlen(text) >= 48) malformed(r, "%s: name '%s' is too long", what, text);
    strcpy(name, text);
}

static unsigned char* hex_bytes(Reader* r, size_t size) {
    char* text = word(r, "value bytes");
    if (strlen(text) != 2 * size)
        malformed(r, "value: %zu bytes announced, %zu hex digits given", size, strlen(text));
    unsigned char* data = allocate(size, 1);
    for (size_t i = 0; i < size; i++) {
        unsigned int byte;
        char pair[3] = {text[2 * i], text[2 * i + 1], '\0'};
        if (!strchr("0123456789abcdefABCDEF", pair[0]) ||
            !strchr("0123456789abcdefABCDEF", pair[1]) || sscanf(pair, "%2x", &byte) != 1)
            malformed(r, "value: '%s' is not hexadecimal", pair);
        data[i] = (unsigned char)byte;
    }
    return data;
}

static char* read_file(const char* path, size_t* size) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) fail(EXIT_BAD_FILE, "%s: cannot be read (%s)", path, strerror(errno));
    size_t capacity = 1 << 16, used = 0;
    char* text = allocate(capacity + 1, 1);
    size_t got;
    while ((got = fread(text + used, 1, capacity - used, f)) > 0) {
        used += got;
        if (used == capacity) {
            capacity *= 2;
            text = realloc(text, capacity + 1);
            if (text == NULL) fail(EXIT_RUN_FAILED, "out of memory");
        }
    }
    if (ferror(f)) fail(EXIT_BAD_FILE, "%s: cannot be read (%s)", path, strerror(errno));
    fclose(f);
    text[used] = '\0';
    if (strlen(text) != used) fail(EXIT_BAD_FILE, "%s: not a probe model file (binary)", path);
    *size = used;
    return text;
}

static void read_operand(Reader* r, ProbeModel* m) {
    Operand* o = &m->operands[m->operand_count++];
    o->code = (int32_t)integer(r, "operand code", 0, 0x7fffffff);
    name_of(r, o->name, "operand name");
    o->scale = number(r, "operand scale");
    o->zero_point = (int32_t)integer(r, "operand zero point", INT32_MIN, INT32_MAX);
    o->rank = (uint32_t)integer(r, "operand rank", 0, 16);
    o->dims = allocate(o->rank, sizeof *o->dims);
    for (uint32_t i = 0; i < o->rank; i++)
        o->dims[i] = (uint32_t)integer(r, "operand dimension", 0, UINT32_MAX);
}

static void read_model(const char* path, ProbeModel* m) {
    size_t size;
    char* text = read_file(path, &size);
    Reader r = {path, 0, text};
    memset(m, 0, sizeof *m);
    m->path = path;
    /* every line holds at most one operand or operation: the line count bounds both */
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    m->operands = allocate(lines, sizeof *m->operands);
    m->operations = allocate(lines, sizeof *m->operations);
    bool ended = false;
    char* next = text;
    if (size == 0) malformed(&r, "empty: not a probe model file");
    while (next != NULL && *next != '\0' && !ended) {
        r.cursor = next;
        r.line++;
        char* newline = strchr(next, '\n');
        if (newline) *newline = '\0';
        next = newline ? newline + 1 : NULL;
        if (r.line == 1) {
            if (strcmp(r.cursor, "torch-nnapi-probe-model 1") != 0 &&
                strcmp(r.cursor, "torch-nnapi-probe-model 1\r") != 0)
                malformed(&r, "not a probe model file (write one with torch-nnapi inspect"
                              " --probe-model)");
            continue;
        }
        while (*r.cursor == ' ' || *r.cursor == '\t' || *r.cursor == '\r') r.cursor++;
        if (*r.cursor == '\0') continue;
        char* keyword = word(&r, "keyword");
        if (strcmp(keyword, "relax") == 0) {
            m->relax = integer(&r, "relax", 0, 1) == 1;
        } else if (strcmp(keyword, "operand") == 0) {
            read_operand(&r, m);
        } else if (strcmp(keyword, "channels") == 0) {
            Operand* o = &m->operands[operand_index(&r, m, "channels operand")];
            o->channel_dim = (uint32_t)integer(&r, "channel dimension", 0, 16);
            o->channel_count = (uint32_t)integer(&r, "channel count", 1, 1 << 24);
            o->channel_scales = allocate(o->channel_count, sizeof(float));
            for (uint32_t i = 0; i < o->channel_count; i++)
                o->channel_scales[i] = number(&r, "channel scale");
        } else if (strcmp(keyword, "value") == 0 || strcmp(keyword, "zeros") == 0) {
            Operand* o = &m->operands[operand_index(&r, m, "constant operand")];
            o->size = (size_t)integer(&r, "byte count", 0, 1LL << 40);
            o->constant = true;
            o->shown = keyword[0] == 'v';
            o->data = o->shown ? hex_bytes(&r, o->size) : allocate(o->size, 1);
        } else if (strcmp(keyword, "omitted") == 0) {
            m->operands[operand_index(&r, m, "omitted operand")].omitted = true;
        } else if (strcmp(keyword, "operation") == 0) {
            Operation* op = &m->operations[m->operation_count++];
            op->code = (int32_t)integer(&r, "operation code", 0, 0x7fffffff);
            name_of(&r, op->name, "operation name");
            op->inputs = index_list(&r, m, &op->input_count, "operation input");
            op->outputs = index_list(&r, m, &op->output_count, "operation output");
        } else if (strcmp(keyword, "inputs") == 0) {
            m->inputs = index_list(&r, m, &m->input_count, "model input");
        } else if (strcmp(keyword, "outputs") == 0) {
            m->outputs = index_list(&r, m, &m->output_count, "model output");
        } else if (strcmp(keyword, "end") == 0) {
            ended = true;
        } else {
            malformed(&r, "unknown line '%s'", keyword);
        }
        at_line_end(&r);
    }
    if (!ended) malformed(&r, "the file ends before its 'end' line (truncated?)");
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

/* ------------------------------------------------------------------ the profile's rules */

typedef struct {
    char* text;
    size_t length, capacity;
} Text;

static void append(Text* t, const char* format, ...) {
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    int needed = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (t->length + (size_t)needed + 1 > t->capacity) {
        t->capacity = 2 * (t->length + (size_t)needed + 1);
        t->text = realloc(t->text, t->capacity);
        if (t->text == NULL) fail(EXIT_RUN_FAILED, "out of memory");
    }
    vsnprintf(t->text + t->length, (size_t)needed + 1, format, again);
    va_end(again);
    t->length += (size_t)needed;
}

static void append_string(Text* t, const char* s) {
    append(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') append(t, "\\%c", c);
        else if (c < 0x20) append(t, "\\u%04x", c);
        else append(t, "%c", c);
    }
    append(t, "\"");
}

static bool is_scalar(int32_t code) {
    return code == 0 || code == 1 || code == 2 || code == 6 || code == 10;
}

static double half_to_double(uint16_t h) {
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double value = exponent == 0 ? ldexp(mantissa, -24)
                 : exponent == 31 ? (mantissa ? NAN : INFINITY)
                 : ldexp(mantissa + 1024, exponent - 25);
    return (h & 0x8000) ? -value : value;
}

/* A constant scalar's value as JSON ("" when it cannot be written). */
static void scalar_value(const Operand* o, char* out, size_t size) {
    out[0] = '\0';
    if (!o->constant || !o->shown) return;
    if (o->code == 1 && o->size == 4) {
        int32_t v; memcpy(&v, o->data, 4); snprintf(out, size, "%d", (int)v);
    } else if (o->code == 2 && o->size == 4) {
        uint32_t v; memcpy(&v, o->data, 4); snprintf(out, size, "%u", (unsigned)v);
    } else if (o->code == 6 && o->size == 1) {
        snprintf(out, size, "%s", o->data[0] ? "true" : "false");
    } else if (o->code == 0 && o->size == 4) {
        float v; memcpy(&v, o->data, 4);
        if (isfinite(v)) snprintf(out, size, "%.17g", (double)v);
    } else if (o->code == 10 && o->size == 2) {
        uint16_t v; memcpy(&v, o->data, 2);
        double d = half_to_double(v);
        if (isfinite(d)) snprintf(out, size, "%.17g", d);
    }
}

static void append_condition(Text* t, const Operand* o) {
    bool scalar = is_scalar(o->code), fully = scalar || o->rank > 0;
    for (uint32_t i = 0; i < o->rank; i++) fully = fully && o->dims[i] > 0;
    append(t, "{\"type\": ");
    append_string(t, o->name);
    if (scalar || o->rank > 0) append(t, ", \"rank\": %u", scalar ? 0u : o->rank);
    append(t, ", \"fullySpecified\": %s", fully ? "true" : "false");
    if (o->scale != 0.0f || o->zero_point != 0)
        append(t, ", \"scale\": %.17g, \"zeroPoint\": %d", (double)o->scale, (int)o->zero_point);
    append(t, ", \"constant\": %s", o->constant ? "true" : "false");
    char value[64];
    scalar_value(o, value, sizeof value);
    if (value[0]) append(t, ", \"value\": %s", value);
    append(t, "}");
}

/* The rule's conditions for operation op: its name and every operand by position. */
static char* conditions(const ProbeModel* m, const Operation* op) {
    Text t = {0};
    append(&t, "{\"operations\": [");
    append_string(&t, op->name);
    append(&t, "],\n     \"inputs\": {");
    for (uint32_t i = 0; i < op->input_count; i++) {
        append(&t, "%s\"%u\": ", i ? ",\n                " : "", i);
        append_condition(&t, &m->operands[op->inputs[i]]);
    }
    append(&t, "},\n     \"outputs\": {");
    for (uint32_t i = 0; i < op->output_count; i++) {
        append(&t, "%s\"%u\": ", i ? ",\n                 " : "", i);
        append_condition(&t, &m->operands[op->outputs[i]]);
    }
    append(&t, "}");
    return t.text;
}

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

static void add_rule(DeviceAnswers* d, char* text, bool supported, const char* where,
                     uint32_t operation) {
    d->probed++;
    d->supported += supported;
    for (size_t i = 0; i < d->rule_count; i++) {
        if (strcmp(d->rules[i].conditions, text) != 0) continue;
        if (d->rules[i].supported != supported)
            fprintf(stderr, "nnapi_probe: warning: %s: %s operation %u and %s operation %u look"
                    " alike to the profile's rules, but %s answers differently: the profile"
                    " keeps the first answer\n", d->name, d->rules[i].where,
                    d->rules[i].operation, where, operation, d->name);
        free(text);
        return;
    }
    d->rules = realloc(d->rules, (d->rule_count + 1) * sizeof *d->rules);
    if (d->rules == NULL) fail(EXIT_RUN_FAILED, "out of memory");
    d->rules[d->rule_count++] = (Rule){text, supported, where, operation};
}

static const char* type_name(int32_t type) {
    switch (type) {
        case 2: return "CPU";
        case 3: return "GPU";
        case 4: return "ACCELERATOR";
        default: return "OTHER"; /* 0 (unknown) and 1 (other) */
    }
}

/* ------------------------------------------------------------------ capabilities */

/* The operand types a profile's operandPerformance names (NNAPI's codes 0 to 14). */
static const char* const OPERAND_TYPES[] = {
    "FLOAT32", "INT32", "UINT32", "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM",
    "BOOL", "TENSOR_QUANT16_SYMM", "TENSOR_FLOAT16", "TENSOR_BOOL8", "FLOAT16",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM",
    "TENSOR_QUANT8_ASYMM_SIGNED"};
enum { TYPE_COUNT = sizeof OPERAND_TYPES / sizeof OPERAND_TYPES[0] };

typedef struct {
    double exec_time, power_usage;
    bool given;
} Performance;

typedef struct {
    Performance fallback; /* no WHAT: the types not named, and relaxed/if/while not given */
    Performance per_type[TYPE_COUNT], relaxed, if_, while_;
} CapabilityOptions;

static void usage(const char* problem);

/* --performance [WHAT=]EXEC,POWER */
static void read_performance(CapabilityOptions* c, const char* value) {
    const char* equals = strchr(value, '=');
    Performance* target = &c->fallback;
    if (equals != NULL) {
        size_t length = (size_t)(equals - value);
        target = NULL;
        for (int k = 0; k < TYPE_COUNT && target == NULL; k++)
            if (strlen(OPERAND_TYPES[k]) == length && strncmp(value, OPERAND_TYPES[k], length) == 0)
                target = &c->per_type[k];
        if (length == 7 && strncmp(value, "relaxed", 7) == 0) target = &c->relaxed;
        if (length == 2 && strncmp(value, "if", 2) == 0) target = &c->if_;
        if (length == 5 && strncmp(value, "while", 5) == 0) target = &c->while_;
        if (target == NULL)
            usage("--performance: WHAT is an operand type name (FLOAT32, TENSOR_QUANT8_ASYMM,"
                  " ...), relaxed, if or while");
        value = equals + 1;
    }
    char extra;
    if (sscanf(value, "%lf,%lf%c", &target->exec_time, &target->power_usage, &extra) != 2 ||
        !(target->exec_time > 0) || !(target->power_usage > 0) ||
        !isfinite(target->exec_time) || !isfinite(target->power_usage))
        usage("--performance: expected two positive numbers, [WHAT=]EXEC,POWER");
    target->given = true;
}

static bool any_performance(const CapabilityOptions* c) {
    bool given = c->fallback.given || c->relaxed.given || c->if_.given || c->while_.given;
    for (int k = 0; k < TYPE_COUNT; k++) given = given || c->per_type[k].given;
    return given;
}

static void append_performance(Text* t, const Performance* p, const Performance* fallback) {
    const Performance* chosen = p->given ? p : fallback;
    append(t, "{\"execTime\": %.9g, \"powerUsage\": %.9g}", chosen->exec_time,
           chosen->power_usage);
}

static void append_capabilities(Text* t, const CapabilityOptions* c) {
    append(t, "  \"capabilities\": {\n    \"operandPerformance\": {\"default\": ");
    append_performance(t, &c->fallback, &c->fallback);
    for (int k = 0; k < TYPE_COUNT; k++) {
        if (!c->per_type[k].given) continue;
        append(t, ",\n      \"%s\": ", OPERAND_TYPES[k]);
        append_performance(t, &c->per_type[k], &c->fallback);
    }
    append(t, "},\n    \"relaxedFloat32toFloat16PerformanceScalar\": ");
    append_performance(t, &c->relaxed, &c->fallback);
    append(t, ",\n    \"relaxedFloat32toFloat16PerformanceTensor\": ");
    append_performance(t, &c->relaxed, &c->fallback);
    append(t, ",\n    \"ifPerformance\": ");
    append_performance(t, &c->if_, &c->fallback);
    append(t, ",\n    \"whilePerformance\": ");
    append_performance(t, &c->while_, &c->fallback);
    append(t, "\n  },\n");
}

static void write_profile(const DeviceAnswers* d, const char* dir, const char* library,
                          const CapabilityOptions* capabilities) {
    char path[4096], file_name[256];
    size_t n = 0;
    for (const char* c = d->name; *c && n < sizeof file_name - 6; c++)
        file_name[n++] = (strchr("/\\:*?\"<>| ", *c) || (unsigned char)*c < 0x20) ? '_' : *c;
    file_name[n] = '\0';
    snprintf(path, sizeof path, "%s/%s.json", dir, file_name);
    Text t = {0};
    int64_t level = d->feature_level > 30 ? 30 : d->feature_level;
    append(&t, "{\n  \"format\": \"torch-nnapi-device-profile/1\",\n  \"name\": ");
    append_string(&t, d->name);
    append(&t, ",\n  \"type\": \"%s\",\n  \"featureLevel\": %lld,\n  \"version\": ",
           type_name(d->type), (long long)level);
    append_string(&t, d->version);
    append(&t, ",\n  \"source\": ");
    char source[4200];
    snprintf(source, sizeof source, "nnapi_probe against %s (device type %d, feature level"
             " %lld)", library, (int)d->type, (long long)d->feature_level);
    append_string(&t, source);
    append(&t, ",\n  \"comment\": \"%s\",\n",
           any_performance(capabilities) ? "capabilities given to nnapi_probe --performance;"
                               " the rules are"
                               " the device's answers for the probed operations only"
                             : "the NDK API does not tell Capabilities: 1.0 (the CPU's) is"
                               " written everywhere, edit them; the rules are the device's"
                               " answers for the probed operations only");
    append_capabilities(&t, capabilities);
    append(&t, "  \"supportedOperations\": [");
    for (size_t i = 0; i < d->rule_count; i++)
        append(&t, "%s\n    %s,\n     \"supported\": %s}", i ? "," : "", d->rules[i].conditions,
               d->rules[i].supported ? "true" : "false");
    append(&t, "\n  ]\n}\n");
    FILE* f = fopen(path, "w");
    if (f == NULL) fail(EXIT_CANNOT_WRITE, "%s: cannot be written (%s)", path, strerror(errno));
    bool ok = fwrite(t.text, 1, t.length, f) == t.length;
    if (fclose(f) != 0 || !ok)
        fail(EXIT_CANNOT_WRITE, "%s: cannot be written (%s)", path, strerror(errno));
    printf("wrote %s: %s supports %zu of the %zu operations probed\n", path, d->name,
           d->supported, d->probed);
    free(t.text);
}

/* ------------------------------------------------------------------ main */

#define USAGE "usage: nnapi_probe [--library PATH] [--out DIR] [--performance" \
    " [WHAT=]EXEC,POWER]... [MODEL_FILE...]\n"

static void usage(const char* problem) {
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
