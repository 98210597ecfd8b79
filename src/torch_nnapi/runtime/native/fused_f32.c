/* Fused element-wise programs over float32 rows (see fused.h).
 *
 * Each thread takes ranges of work items (a row, or a chunk of one), points every slot at its
 * data for the item (inputs through their outer strides, registers into the thread's scratch,
 * the output) and runs the instructions in order, each as one loop the compiler vectorizes
 * (exp, tanh and logistic sixteen lanes at a time). */

#include "fused.h"

#include "tnn.h"
#include "vecmath.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#define LANES 16

/* Where one operand of an instruction is for the current item: its values and whether they
 * run along the item (a vector) or are one value (a scalar). */
typedef struct {
    float *at;
    int vector;
} Slot;

#define FORCE_INLINE static inline __attribute__((always_inline))

/* One value in every lane (an exact broadcast: -0 stays -0, NaN stays NaN). */
FORCE_INLINE tnn_f32x16 splat(float v) {
    tnn_f32x16 r;
    for (int i = 0; i < LANES; i++) r[i] = v;
    return r;
}

/* dst[i] = expr(a, b), each of a and b a vector or a scalar; n is 1 when both are scalars.
 * Sixteen lanes at a time (vexpr, the same IEEE operation on vectors, a scalar operand
 * broadcast; explicit, as the exp, tanh and logistic instructions are, rather than left to
 * the compiler's vectorizer), the rest one at a time. */
#define BINARY_LOOP(expr, vexpr)                                                              \
    do {                                                                                      \
        ptrdiff_t i = 0;                                                                      \
        if (va || vb) {                                                                       \
            const tnn_f32x16 a_all = splat(x[0]), b_all = splat(y[0]);                        \
            for (; i + LANES <= n; i += LANES) {                                              \
                const tnn_f32x16 A = va ? tnn_load_f32x16(x + i) : a_all;                     \
                const tnn_f32x16 B = vb ? tnn_load_f32x16(y + i) : b_all;                     \
                tnn_store_f32x16(d + i, (vexpr));                                             \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i++) {                                                                  \
            const float a = x[va ? i : 0], b = y[vb ? i : 0];                                 \
            d[i] = (expr);                                                                    \
        }                                                                                     \
    } while (0)

FORCE_INLINE void binary(int op, float *d, const float *x, int va, const float *y, int vb,
                         ptrdiff_t n) {
    switch (op) {
    case TNN_FUSED_ADD: BINARY_LOOP(a + b, A + B); break;
    case TNN_FUSED_SUB: BINARY_LOOP(a - b, A - B); break;
    case TNN_FUSED_MUL: BINARY_LOOP(a * b, A * B); break;
    case TNN_FUSED_DIV: BINARY_LOOP(a / b, A / B); break;
    /* the reference's np.where(a < b, b, a) and np.where(b < a, b, a) */
    case TNN_FUSED_MAXIMUM: BINARY_LOOP(a < b ? b : a, tnn_select_f32x16(A < B, B, A)); break;
    default: BINARY_LOOP(b < a ? b : a, tnn_select_f32x16(B < A, B, A)); break;
    }
}

/* d[i] = expr of V = x[i], sixteen at a time, the last partial group through a padded copy. */
#define VECTOR_MAP(expr)                                                                      \
    do {                                                                                      \
        ptrdiff_t i = 0;                                                                      \
        for (; i + LANES <= n; i += LANES) {                                                  \
            const tnn_f32x16 V = tnn_load_f32x16(x + i);                                      \
            tnn_store_f32x16(d + i, (expr));                                                  \
        }                                                                                     \
        if (i < n) {                                                                          \
            float t[LANES] = {0};                                                             \
            memcpy(t, x + i, (size_t)(n - i) * sizeof *t);                                    \
            const tnn_f32x16 V = tnn_load_f32x16(t);                                          \
            tnn_store_f32x16(t, (expr));                                                      \
            memcpy(d + i, t, (size_t)(n - i) * sizeof *t);                                    \
        }                                                                                     \
    } while (0)

FORCE_INLINE tnn_f32x16 negate(tnn_f32x16 v) { return -v; }
FORCE_INLINE tnn_f32x16 absolute(tnn_f32x16 v) {
    return (tnn_f32x16)((tnn_i32x16)v & TNN_INT32_MAX);
}

FORCE_INLINE void unary(const tnn_fused_instruction *in, float *d, const float *x, ptrdiff_t n) {
    const float lo = in->lo, hi = in->hi;
    switch (in->op) {
    case TNN_FUSED_NEG: VECTOR_MAP(negate(V)); break;
    case TNN_FUSED_ABS: VECTOR_MAP(absolute(V)); break;
    case TNN_FUSED_SQRT: for (ptrdiff_t i = 0; i < n; i++) d[i] = __builtin_sqrtf(x[i]); break;
    case TNN_FUSED_RSQRT:
        for (ptrdiff_t i = 0; i < n; i++) d[i] = 1.0f / __builtin_sqrtf(x[i]);
        break;
    case TNN_FUSED_EXP: VECTOR_MAP(tnn_exp_f32x16(V)); break;
    case TNN_FUSED_TANH: VECTOR_MAP(tnn_tanh_f32x16(V)); break;
    case TNN_FUSED_LOGISTIC: VECTOR_MAP(tnn_logistic_f32x16(V)); break;
    case TNN_FUSED_CLIP: { /* np.clip: NaN stays NaN */
        ptrdiff_t i = 0;
        for (; i + LANES <= n; i += LANES)
            tnn_store_f32x16(d + i, tnn_clamp_f32x16(tnn_load_f32x16(x + i), lo, hi));
        for (; i < n; i++) {
            float v = x[i] < lo ? lo : x[i];
            d[i] = v > hi ? hi : v;
        }
        break;
    }
    default: { /* TNN_FUSED_RELU: std::min(std::max(lo, x), hi), NaN becomes lo */
        ptrdiff_t i = 0;
        const tnn_f32x16 low = splat(lo), high = splat(hi);
        for (; i + LANES <= n; i += LANES) {
            const tnn_f32x16 v = tnn_load_f32x16(x + i);
            const tnn_f32x16 up = tnn_select_f32x16(v > low, v, low);
            tnn_store_f32x16(d + i, tnn_select_f32x16(up > high, high, up));
        }
        for (; i < n; i++) {
            float v = x[i] > lo ? x[i] : lo;
            d[i] = v > hi ? hi : v;
        }
        break;
    }
    }
}

/* A row's sum: sixteen float32 lanes per block of 256 values, the blocks' sums in double. */
FORCE_INLINE float row_sum(const float *x, ptrdiff_t n) {
    double total = 0;
    ptrdiff_t i = 0;
    while (i + LANES <= n) {
        tnn_f32x16 acc = tnn_load_f32x16(x + i);
        ptrdiff_t end = TNN_MIN(n, i + 256);
        for (i += LANES; i + LANES <= end; i += LANES) acc += tnn_load_f32x16(x + i);
        for (int k = 0; k < LANES; k++) total += acc[k];
    }
    for (; i < n; i++) total += x[i];
    return (float)total;
}

/* REDUCE_MAX / REDUCE_MIN from NumPy's initial value (the largest finite float32), NaN
 * when a value is NaN. */
FORCE_INLINE float row_extreme(const float *x, ptrdiff_t n, int largest) {
    float best = largest ? -FLT_MAX : FLT_MAX;
    int nan = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        float v = x[i];
        nan |= v != v;
        best = largest ? (v > best ? v : best) : (v < best ? v : best);
    }
    return nan ? __builtin_nanf("") : best;
}

FORCE_INLINE void reduce(int op, float *d, const float *x, int vector, ptrdiff_t n) {
    ptrdiff_t count = vector ? n : 1;
    switch (op) {
    case TNN_FUSED_SUM: d[0] = row_sum(x, count); break;
    case TNN_FUSED_MEAN: d[0] = row_sum(x, count) / (float)count; break;
    case TNN_FUSED_MAX: d[0] = row_extreme(x, count, 1); break;
    default: d[0] = row_extreme(x, count, 0); break;
    }
}

/* GELU as the converter lowers it (lowerings/activation.py), operation by operation:
 * 0.5 (x + |x| - |x| erfc(|x| / sqrt 2)), erfc by Abramowitz and Stegun 7.1.26; k holds the
 * chain's constants in the order fused_patterns.py reads them. */
FORCE_INLINE tnn_f32x16 gelu_erf(tnn_f32x16 x, const float *k) {
    const tnn_f32x16 ax = absolute(x), z = ax * k[0];
    const tnn_f32x16 t = k[2] / (z * k[1] + k[3]);
    tnn_f32x16 poly = t * k[4];
    for (int i = 5; i < 9; i++) poly = (poly + k[i]) * t;
    /* -(z z) <= 0, NaN only where x is (where the result is NaN whatever erfc is) */
    const tnn_f32x16 gauss = tnn_exp_nonpositive_f32x16(
        tnn_select_f32x16(x != x, splat(0.0f), -(z * z)));
    const tnn_f32x16 erfc = poly * gauss;
    return ((x + ax) - ax * erfc) * k[9];
}

/* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), likewise. */
FORCE_INLINE tnn_f32x16 gelu_tanh(tnn_f32x16 x, const float *k) {
    const tnn_f32x16 inner = (x + ((x * x) * x) * k[0]) * k[1];
    return (x * (tnn_tanh_f32x16(inner) + k[2])) * k[3];
}

FORCE_INLINE void gelu_erf4(tnn_f32x16 *v, const float *k) {
    for (int j = 0; j < 4; j++) v[j] = gelu_erf(v[j], k);
}

FORCE_INLINE void gelu_tanh4(tnn_f32x16 *v, const float *k) {
    for (int j = 0; j < 4; j++) v[j] = gelu_tanh(v[j], k);
}

/* A row's (x - mean) * rsqrt(mean((x - mean)^2) + eps), each step as its instruction computes
 * it (the squares summed in row_sum's order), in three passes instead of seven. */
FORCE_INLINE void normalize(float *d, const float *x, ptrdiff_t n, float eps, const float *w,
                            const float *bias) {
    const float mean = row_sum(x, n) / (float)n;
    const tnn_f32x16 m = splat(mean);
    double total = 0;
    ptrdiff_t i = 0;
    while (i + LANES <= n) {
        tnn_f32x16 acc = splat(0.0f);
        ptrdiff_t end = TNN_MIN(n, i + 256);
        for (; i + LANES <= end; i += LANES) {
            const tnn_f32x16 v = tnn_load_f32x16(x + i) - m;
            tnn_store_f32x16(d + i, v);
            acc += v * v; /* 0 + v^2 is v^2: the sums row_sum makes */
        }
        for (int k = 0; k < LANES; k++) total += acc[k];
    }
    for (; i < n; i++) {
        const float v = x[i] - mean;
        d[i] = v;
        total += v * v;
    }
    const float scale = 1.0f / __builtin_sqrtf((float)total / (float)n + eps);
    const tnn_f32x16 s = splat(scale);
    if (!w) {
        for (i = 0; i + LANES <= n; i += LANES)
            tnn_store_f32x16(d + i, tnn_load_f32x16(d + i) * s);
        for (; i < n; i++) d[i] *= scale;
        return;
    }
    /* the weight's MUL and the bias's ADD, each rounded as its instruction rounds */
    for (i = 0; i + LANES <= n; i += LANES)
        tnn_store_f32x16(d + i, tnn_load_f32x16(d + i) * s * tnn_load_f32x16(w + i) +
                                    tnn_load_f32x16(bias + i));
    for (; i < n; i++) d[i] = d[i] * scale * w[i] + bias[i];
}

/* d[i] = f(x[i], k) for a recognised chain f: four vectors an iteration, four independent
 * dependency chains for the processor to overlap (one chain this long would wait on itself). */
#define INTERLEAVED_MAP(f)                                                                    \
    do {                                                                                      \
        ptrdiff_t i = 0;                                                                      \
        for (; i + 4 * LANES <= n; i += 4 * LANES) {                                          \
            tnn_f32x16 v[4];                                                                  \
            for (int j = 0; j < 4; j++) v[j] = tnn_load_f32x16(x + i + j * LANES);            \
            f(v, k);                                                                          \
            for (int j = 0; j < 4; j++) tnn_store_f32x16(d + i + j * LANES, v[j]);            \
        }                                                                                     \
        for (; i < n; i += LANES) {                                                           \
            float t[LANES] = {0};                                                             \
            const ptrdiff_t count = TNN_MIN(LANES, n - i);                                    \
            memcpy(t, x + i, (size_t)count * sizeof *t);                                      \
            tnn_f32x16 v[4] = {tnn_load_f32x16(t)};                                           \
            f(v, k);                                                                          \
            tnn_store_f32x16(t, v[0]);                                                        \
            memcpy(d + i, t, (size_t)count * sizeof *t);                                      \
        }                                                                                     \
    } while (0)

FORCE_INLINE void recognised(const tnn_fused_instruction *in, float *d, const float *x,
                             const float *w, const float *bias, ptrdiff_t n) {
    const float *k = in->k;
    switch (in->op) {
    case TNN_FUSED_GELU_ERF: INTERLEAVED_MAP(gelu_erf4); break;
    case TNN_FUSED_GELU_TANH: INTERLEAVED_MAP(gelu_tanh4); break;
    case TNN_FUSED_NORMALIZE: normalize(d, x, n, k[0], NULL, NULL); break;
    default: normalize(d, x, n, k[0], w, bias); break;
    }
}

typedef struct {
    const tnn_fused_program *p;
    const float *const *inputs;
    float *out;
    ptrdiff_t chunks, width;
    int failed;
} Job;

TNN_VECTOR_CLONES
static void run_items(void *arg, ptrdiff_t start, ptrdiff_t stop, int thread) {
    (void)thread;
    Job *job = arg;
    const tnn_fused_program *p = job->p;
    const int inputs = p->inputs, slots = p->inputs + p->registers + 1;
    Slot stack_slots[32];
    Slot *slot = slots <= 32 ? stack_slots : malloc((size_t)slots * sizeof *slot);
    float *scratch = malloc((size_t)(p->registers ? p->registers : 1) * (size_t)job->width *
                            sizeof *scratch);
    if (!slot || !scratch) {
        job->failed = 1;
        if (slot != stack_slots) free(slot);
        free(scratch);
        return;
    }
    for (int r = 0; r < p->registers; r++)
        slot[inputs + r] = (Slot){scratch + (ptrdiff_t)r * job->width, p->register_vector[r]};
    for (ptrdiff_t item = start; item < stop; item++) {
        const ptrdiff_t row = item / job->chunks, first = (item % job->chunks) * p->chunk;
        const ptrdiff_t n = TNN_MIN(p->chunk, p->inner - first);
        ptrdiff_t index[TNN_FUSED_MAX_OUTER], rest = row;
        for (int k = p->outer_rank - 1; k >= 0; k--) {
            index[k] = rest % p->outer[k];
            rest /= p->outer[k];
        }
        for (int s = 0; s < inputs; s++) {
            const tnn_fused_input *in = &p->input[s];
            ptrdiff_t at = in->vector ? first : 0;
            for (int k = 0; k < p->outer_rank; k++) at += index[k] * in->strides[k];
            slot[s] = (Slot){(float *)job->inputs[s] + at, in->vector};
        }
        slot[slots - 1] = (Slot){job->out + (p->output_vector ? row * p->inner + first : row),
                                 p->output_vector};
        for (int c = 0; c < p->length; c++) {
            const tnn_fused_instruction *in = &p->code[c];
            const Slot d = slot[in->dst], a = slot[in->a];
            const ptrdiff_t length = d.vector ? n : 1;
            if (in->op <= TNN_FUSED_MINIMUM) {
                const Slot b = slot[in->b];
                binary(in->op, d.at, a.at, a.vector, b.at, b.vector, length);
            } else if (in->op < TNN_FUSED_SUM) {
                unary(in, d.at, a.at, length);
            } else if (in->op <= TNN_FUSED_MIN) {
                reduce(in->op, d.at, a.at, a.vector, n);
            } else {
                recognised(in, d.at, a.at, slot[in->b].at, slot[in->c].at, length);
            }
        }
    }
    if (slot != stack_slots) free(slot);
    free(scratch);
}

const char *tnn_fused_check(const tnn_fused_program *p) {
    const int slots = p->inputs + p->registers + 1;
    if (p->outer_rank < 0 || p->outer_rank > TNN_FUSED_MAX_OUTER) return "too many dimensions";
    if (p->inner < 1 || p->chunk < 1 || p->chunk > p->inner) return "bad row or chunk length";
    for (int k = 0; k < p->outer_rank; k++)
        if (p->outer[k] < 1) return "an empty dimension";
    if (p->length < 1) return "no instruction";
    int reduces = 0;
    for (int c = 0; c < p->length; c++) {
        const tnn_fused_instruction *in = &p->code[c];
        if (in->op < 0 || in->op >= TNN_FUSED_OPCODES) return "unknown operation";
        int binary_op = in->op <= TNN_FUSED_MINIMUM;
        int reduction = in->op >= TNN_FUSED_SUM && in->op <= TNN_FUSED_MIN;
        int affine = in->op == TNN_FUSED_NORMALIZE_AFFINE;
        int whole_row = in->op == TNN_FUSED_NORMALIZE || affine;
        if (in->a < 0 || in->a >= slots - 1 || (binary_op && (in->b < 0 || in->b >= slots - 1)))
            return "an operand out of range";
        if (in->dst < p->inputs || in->dst >= slots) return "a destination out of range";
        if ((in->dst == slots - 1) != (c == p->length - 1))
            return "only the last instruction writes the output";
        int dst_vector = in->dst == slots - 1 ? p->output_vector
                                              : p->register_vector[in->dst - p->inputs];
        int a_vector = in->a < p->inputs ? p->input[in->a].vector
                                         : p->register_vector[in->a - p->inputs];
        int b_vector = !binary_op ? 0
                       : in->b < p->inputs ? p->input[in->b].vector
                                           : p->register_vector[in->b - p->inputs];
        int expected = reduction ? 0 : (a_vector || b_vector);
        if (dst_vector != expected) return "a destination of the wrong kind";
        if (whole_row && !a_vector) return "a row normalization of a scalar";
        if (affine) {
            if (in->b < 0 || in->b >= slots - 1 || in->c < 0 || in->c >= slots - 1)
                return "an operand out of range";
            int b_kind = in->b < p->inputs ? p->input[in->b].vector
                                           : p->register_vector[in->b - p->inputs];
            int c_kind = in->c < p->inputs ? p->input[in->c].vector
                                           : p->register_vector[in->c - p->inputs];
            if (!b_kind || !c_kind || in->dst == in->b || in->dst == in->c)
                return "a row normalization's weight or bias not a row";
        }
        if (!reduction && (in->dst == in->a || (binary_op && in->dst == in->b)) &&
            (a_vector != dst_vector || (binary_op && b_vector != dst_vector)))
            return "a destination overwriting a scalar operand";
        reduces |= reduction || whole_row;
    }
    if (reduces && p->chunk != p->inner) return "reductions need whole rows";
    return NULL;
}

int tnn_fused_run(const tnn_fused_program *p, const float *const *inputs, float *out) {
    ptrdiff_t rows = 1;
    for (int k = 0; k < p->outer_rank; k++) rows *= p->outer[k];
    const ptrdiff_t chunks = (p->inner + p->chunk - 1) / p->chunk;
    /* Registers rounded up to whole vectors (the padded tails write into them). */
    Job job = {p, inputs, out, chunks, (p->chunk + LANES - 1) / LANES * LANES, 0};
    const ptrdiff_t items = rows * chunks;
    const int threads = tnn_get_threads();
    /* At least some 16K values of work per range. */
    const ptrdiff_t per_item = TNN_MIN(p->chunk, p->inner) * (p->length + 1);
    tnn_parallel_for(items, tnn_grain(items, 1 + (1 << 16) / per_item, threads), threads,
                     run_items, &job);
    return job.failed ? -1 : 0;
}
