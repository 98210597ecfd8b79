/* nnapi_probe: the probe model file (docs/device_profiles.md, "The probe model file"), read
 * with plain C: a line, a keyword, numbers. */
#include "nnapi_probe.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void read_model(const char* path, ProbeModel* m) {
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
