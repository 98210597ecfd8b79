/* Calling NumPy's BLAS, or oneDNN's sgemm, from the kernels' threads.
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

/* oneDNN's dnnl_sgemm (row-major) and the OpenMP thread-count functions of the OpenMP runtime
 * it was built with: each call runs on the calling thread alone (its OpenMP thread count set
 * to 1 for the call, as the OpenMP runtime keeps that count per thread), so that oneDNN never
 * starts OpenMP workers beside the kernels' own pool. */
typedef int (*onednn_sgemm)(char, char, int64_t, int64_t, int64_t, float, const float *,
                            int64_t, const float *, int64_t, float, float *, int64_t);
static onednn_sgemm onednn;
static void (*omp_set_threads)(int);
static int (*omp_get_threads)(void);

void tnn_set_sgemm(void *function, int ilp64) {
    sgemm = function;
    sgemm_has_ilp64 = ilp64;
}

void tnn_set_onednn(void *function, void *set_threads, void *get_threads) {
    if (!function || !set_threads || !get_threads) {
        onednn = NULL;
        return;
    }
    omp_set_threads = (void (*)(int))set_threads;
    omp_get_threads = (int (*)(void))get_threads;
    onednn = (onednn_sgemm)function;
}

int tnn_has_sgemm(void) { return sgemm != NULL || onednn != NULL; }

int tnn_sgemm_library(void) { return onednn ? 2 : sgemm ? 1 : 0; }

void tnn_sgemm_nt(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a, ptrdiff_t lda,
                  const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc) {
    if (onednn) {
        const int threads = omp_get_threads();
        if (threads != 1) omp_set_threads(1);
        onednn('N', 'T', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        if (threads != 1) omp_set_threads(threads);
    } else if (sgemm_has_ilp64)
        ((sgemm_ilp64)sgemm)(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                             ldc);
    else
        ((sgemm_lp64)sgemm)(ROW_MAJOR, NO_TRANS, TRANS, (int)m, (int)n, (int)k, 1.0f, a, (int)lda,
                            b, (int)ldb, 0.0f, c, (int)ldc);
}
