/* A fork-join pool of worker threads for the native kernels.
 *
 * tnn_parallel_for hands out ranges of a job to the workers and the calling thread, which
 * claim them from a shared counter until none is left. Waiting is short and then blocking:
 * after a job, workers watch for the next one for some tens of microseconds (kernels come in
 * quick succession) before they sleep on a condition variable, and a caller whose helpers are
 * not done after as long sleeps until the last one wakes it. So the pool never holds a core
 * it has no work for, which is what makes several pools on the same cores (NumPy's BLAS,
 * PyTorch's OpenMP, ours) slow each other down; and on a loaded machine a descheduled helper
 * costs a wake-up, not a spinning caller. One job runs at a time; a thread that finds the pool
 * busy (another Python thread executing a model at the same time) runs its job alone. A forked
 * child starts with no workers and creates its own. */

#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */

#include "tnn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if TNN_X86
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 1024
/* How long a worker watches for the next job, and a caller for its helpers, before sleeping. */
#define SPIN_NANOSECONDS 30000

typedef struct {
    tnn_task fn;
    void *arg;
    ptrdiff_t count, grain;
    atomic_ptrdiff_t next;
    atomic_int running; /* helpers not yet done */
} Job;

/* The published job: its generation number and how many workers help (those with an index
 * below it), in one word so that a worker reads both at once. A helper's job cannot be
 * replaced before it has counted itself done. */
#define HELPER_BITS 16
#define PUBLISHED(generation, helpers) (((uint64_t)(generation) << HELPER_BITS) | (helpers))
#define HELPERS(word) ((int)((word) & ((1u << HELPER_BITS) - 1)))

static struct {
    pthread_mutex_t lock; /* guards sleeping, waking and starting workers */
    pthread_cond_t wake;  /* workers: a job was published */
    pthread_cond_t done;  /* the caller: the last helper finished */
    pthread_mutex_t busy; /* held while a job runs */
    _Atomic uint64_t published;
    uint64_t generation;
    int started;
    atomic_int threads;
    Job job;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 1, {0}};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Polls until condition(arg) holds or SPIN_NANOSECONDS pass; returns whether it holds. */
static int spin_until(int (*condition)(const void *), const void *arg) {
    int64_t deadline = 0;
    for (int polls = 0;; polls++) {
        if (condition(arg)) return 1;
        CPU_RELAX();
        if ((polls & 63) == 63) {
            int64_t t = now_ns();
            if (!deadline) deadline = t + SPIN_NANOSECONDS;
            else if (t > deadline) return 0;
        }
    }
}

static int changed(const void *seen) {
    return atomic_load(&pool.published) != *(const uint64_t *)seen;
}

static int helpers_done(const void *job) {
    return atomic_load(&((Job *)job)->running) == 0;
}

static void run_ranges(Job *job, int thread) {
    for (;;) {
        ptrdiff_t start = atomic_fetch_add(&job->next, job->grain);
        if (start >= job->count) return;
        ptrdiff_t stop = start + job->grain < job->count ? start + job->grain : job->count;
        job->fn(job->arg, start, stop, thread);
    }
}

static void *worker(void *arg) {
    int index = (int)(intptr_t)arg;
    /* Whatever is published when it starts: an earlier job, for which it is too new to be a
     * helper, or the job it was started for. */
    uint64_t seen = UINT64_MAX;
    for (;;) {
        if (!spin_until(changed, &seen)) {
            pthread_mutex_lock(&pool.lock);
            while (atomic_load(&pool.published) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = atomic_load(&pool.published);
        if (index < HELPERS(seen)) {
            run_ranges(&pool.job, index + 1);
            if (atomic_fetch_sub(&pool.job.running, 1) == 1) {
                pthread_mutex_lock(&pool.lock);
                pthread_cond_signal(&pool.done);
                pthread_mutex_unlock(&pool.lock);
            }
        }
    }
    return NULL;
}

/* Starts workers up to `count`; returns how many there are. Called with pool.busy held. */
static int ensure_workers(int count) {
    pthread_mutex_lock(&pool.lock);
    while (pool.started < count) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attr, worker, (void *)(intptr_t)pool.started);
        pthread_attr_destroy(&attr);
        if (failed) break;
        pool.started++;
    }
    int started = pool.started;
    pthread_mutex_unlock(&pool.lock);
    return started;
}

void tnn_parallel_for(ptrdiff_t count, ptrdiff_t grain, int threads, tnn_task fn, void *arg) {
    if (count <= 0) return;
    if (grain < 1) grain = 1;
    ptrdiff_t ranges = (count + grain - 1) / grain;
    int helpers = (int)(ranges < threads ? ranges : threads) - 1;
    if (helpers > 0 && pthread_mutex_trylock(&pool.busy) == 0) {
        helpers = TNN_MIN(helpers, ensure_workers(helpers));
        if (helpers > 0) {
            Job *job = &pool.job;
            job->fn = fn;
            job->arg = arg;
            job->count = count;
            job->grain = grain;
            atomic_store(&job->next, 0);
            atomic_store(&job->running, helpers);
            pthread_mutex_lock(&pool.lock);
            pool.generation++;
            atomic_store(&pool.published, PUBLISHED(pool.generation, helpers));
            pthread_cond_broadcast(&pool.wake);
            pthread_mutex_unlock(&pool.lock);
            run_ranges(job, 0);
            if (!spin_until(helpers_done, job)) {
                pthread_mutex_lock(&pool.lock);
                while (atomic_load(&job->running) > 0) pthread_cond_wait(&pool.done, &pool.lock);
                pthread_mutex_unlock(&pool.lock);
            }
        }
        pthread_mutex_unlock(&pool.busy);
        if (helpers > 0) return;
    }
    for (ptrdiff_t start = 0; start < count; start += grain)
        fn(arg, start, start + grain < count ? start + grain : count, 0);
}

void tnn_set_threads(int threads) {
    atomic_store(&pool.threads, threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads);
}

int tnn_get_threads(void) { return atomic_load(&pool.threads); }

ptrdiff_t tnn_grain(ptrdiff_t count, ptrdiff_t minimum, int threads) {
    ptrdiff_t grain = count / (4 * (ptrdiff_t)threads);
    if (threads == 1 || grain < minimum) grain = minimum;
    return grain < 1 ? 1 : grain;
}

static void forget_workers(void) {
    /* The child of a fork has only the forking thread: no worker, no job running. */
    pthread_mutex_t unlocked = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh = PTHREAD_COND_INITIALIZER;
    pool.lock = unlocked;
    pool.busy = unlocked;
    pool.wake = fresh;
    pool.done = fresh;
    pool.started = 0;
    pool.generation = 0;
    atomic_store(&pool.published, PUBLISHED(0, 0));
}

__attribute__((constructor)) static void register_fork_handler(void) {
    pthread_atfork(NULL, NULL, forget_workers);
}
