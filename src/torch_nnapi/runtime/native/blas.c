/* Calling NumPy's BLAS from the kernels' threads.
 *
 * NumPy's bundled OpenBLAS exports CBLAS's sgemm (with 64-bit integers in NumPy's wheels);
 * the Python side finds it in the process (native/blas.py) and hands its address here. Float
 * convolutions then run as many single-threaded GEMMs on blocks of rows and columns, split
 * over this module's thread pool, each block followed at once by its bias and activation; so
 * a model runs on one pool only (OpenBLAS is kept to one thread, see runtime/threads.py). */

#include "kernels.h"

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef void (*sgemm_ilp64)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                            int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm_lp64)(int, int, int, int, int, int, float, const float *, int,
                           const float *, int, float, float *, int);

static void *sgemm;
static int sgemm_has_ilp64;

void tnn_set_sgemm(void *function, int ilp64) {
    sgemm = function;
    sgemm_has_ilp64 = ilp64;
}

int tnn_has_sgemm(void) { return sgemm != NULL; }

void tnn_sgemm_nt(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a, ptrdiff_t lda,
                  const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc) {
    if (sgemm_has_ilp64)
        ((sgemm_ilp64)sgemm)(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                             ldc);
    else
        ((sgemm_lp64)sgemm)(ROW_MAJOR, NO_TRANS, TRANS, (int)m, (int)n, (int)k, 1.0f, a, (int)lda,
                            b, (int)ldb, 0.0f, c, (int)ldc);
}
