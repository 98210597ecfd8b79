/* nnapi_probe: the device profile it writes (docs/device_profiles.md): one rule per distinct
 * probed operation, every operand by position, and the Capabilities --performance gives. */
#include "nnapi_probe.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
char* conditions(const ProbeModel* m, const Operation* op) {
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

void add_rule(DeviceAnswers* d, char* text, bool supported, const char* where,
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

const char* type_name(int32_t type) {
    switch (type) {
        case 2: return "CPU";
        case 3: return "GPU";
        case 4: return "ACCELERATOR";
        default: return "OTHER"; /* 0 (unknown) and 1 (other) */
    }
}

/* The operand types a profile's operandPerformance names (NNAPI's codes 0 to 14). */
static const char* const OPERAND_TYPES[TYPE_COUNT] = {
    "FLOAT32", "INT32", "UINT32", "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM",
    "BOOL", "TENSOR_QUANT16_SYMM", "TENSOR_FLOAT16", "TENSOR_BOOL8", "FLOAT16",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM",
    "TENSOR_QUANT8_ASYMM_SIGNED"};

/* --performance [WHAT=]EXEC,POWER */
void read_performance(CapabilityOptions* c, const char* value) {
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

bool any_performance(const CapabilityOptions* c) {
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

void write_profile(const DeviceAnswers* d, const char* dir, const char* library,
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

