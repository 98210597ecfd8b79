/* Fused element-wise programs (fused_f32.c): a chain of float32 NNAPI operations computed in
 * one pass over its output, each operation's intermediate result kept in a small per-thread
 * register instead of a tensor.
 *
 * The iteration space is the output seen as rows: `outer` dimensions (each input's element
 * strides along them, 0 where it broadcasts) and one inner dimension, along which an input or
 * register either runs (a vector: stride 1) or holds one value per row (a scalar). Without
 * row reductions the inner dimension is cut into chunks of at most `chunk` elements; with
 * them a register holds a whole row. Instructions are operations on slots: the inputs first,
 * then the registers, then the output; each computes what one NNAPI operation computes, with
 * the same float32 roundings (no contraction), so that the chain equals the operations run one
 * by one -- exp, tanh and logistic within a few ulp (vecmath.h). */

#ifndef TNN_FUSED_H
#define TNN_FUSED_H

#include <stddef.h>
#include <stdint.h>

#define TNN_FUSED_MAX_OUTER 6
#define TNN_FUSED_CONSTANTS 10

enum {
    /* binary: dst = a op b */
    TNN_FUSED_ADD, TNN_FUSED_SUB, TNN_FUSED_MUL, TNN_FUSED_DIV, TNN_FUSED_MAXIMUM,
    TNN_FUSED_MINIMUM,
    /* unary: dst = f(a) */
    TNN_FUSED_NEG, TNN_FUSED_ABS, TNN_FUSED_EXP, TNN_FUSED_TANH, TNN_FUSED_LOGISTIC,
    TNN_FUSED_SQRT, TNN_FUSED_RSQRT,
    /* clamps to [lo, hi]: a fused activation (NaN stays NaN), RELU* (NaN becomes lo) */
    TNN_FUSED_CLIP, TNN_FUSED_RELU,
    /* a row's reduction into a scalar */
    TNN_FUSED_SUM, TNN_FUSED_MEAN, TNN_FUSED_MAX, TNN_FUSED_MIN,
    /* a recognised chain of operations as one (fused_patterns.py), its constants in k, the
     * same float32 operations in the same order: GELU as the converter lowers it (erf and
     * tanh forms: dst = gelu(a)), and a layer norm's normalization of each row
     * (dst = (a - mean) * rsqrt(mean((a - mean)^2) + k[0]); whole rows only), with its
     * weight and bias (dst = normalized * b + c, b and c vectors) */
    TNN_FUSED_GELU_ERF, TNN_FUSED_GELU_TANH, TNN_FUSED_NORMALIZE, TNN_FUSED_NORMALIZE_AFFINE,
    TNN_FUSED_OPCODES
};

typedef struct {
    int op, dst, a, b; /* slots; b is unused by unary operations and reductions */
    int c;             /* the bias slot of TNN_FUSED_NORMALIZE_AFFINE */
    float lo, hi;      /* the clamps' bounds */
    float k[TNN_FUSED_CONSTANTS]; /* a recognised chain's constants */
} tnn_fused_instruction;

typedef struct {
    ptrdiff_t count;                         /* elements the array must have */
    ptrdiff_t strides[TNN_FUSED_MAX_OUTER]; /* along the outer dimensions */
    int vector;                              /* runs along the inner dimension (stride 1) */
} tnn_fused_input;

typedef struct {
    int outer_rank;
    ptrdiff_t outer[TNN_FUSED_MAX_OUTER];
    ptrdiff_t inner, chunk;
    int inputs, registers;
    tnn_fused_input *input;
    unsigned char *register_vector; /* per register: a vector (1) or a scalar per row (0) */
    int output_vector;
    int length;
    tnn_fused_instruction *code;
} tnn_fused_program;

/* Checks a program (slots in range, vectors only where a row's values run, reductions only
 * when rows are whole); returns NULL when it is fine, else what is wrong. */
const char *tnn_fused_check(const tnn_fused_program *p);
/* Runs the program on inputs[p->inputs] into out (rows times inner, or rows when the output
 * is a scalar per row). Returns 0, or -1 when out of memory. */
int tnn_fused_run(const tnn_fused_program *p, const float *const *inputs, float *out);

#endif
