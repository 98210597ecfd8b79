"""Splitting one large NumPy computation into row blocks, optionally over several threads.

Blocks are kept small enough to stay in cache between the passes a kernel makes over them.
NumPy's element-wise loops and einsum run on one thread but release the GIL, so blocks can
also run side by side: TORCH_NNAPI_NUM_THREADS > 1 enables that. It is off by default
because BLAS keeps its worker threads busy-waiting for a while after every matmul, and
competing with them for the cores measured slower overall than one thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# Below this many elements per thread, handing work to a thread costs more than it saves.
MIN_ELEMENTS_PER_THREAD = 1 << 16
# Elements per block: a few hundred kilobytes, so consecutive passes over a block hit cache.
BLOCK_ELEMENTS = 1 << 16

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """A forked child has none of the parent's threads: it starts a pool of its own."""
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def thread_count() -> int:
    value = os.environ.get("TORCH_NNAPI_NUM_THREADS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1


def for_row_blocks(rows: int, elements_per_row: int, work: Callable[[int, int], None]) -> None:
    """Calls work(start, stop) on consecutive blocks covering [0, rows).

    Threads take the next unclaimed block until none is left, so a thread the OS leaves
    waiting does not hold the others up by more than one block.
    """
    if rows <= 0:
        return
    total = rows * elements_per_row
    if total <= BLOCK_ELEMENTS:  # the common small case: one block on this thread
        work(0, rows)
        return
    blocks = min(rows, total // BLOCK_ELEMENTS)
    bounds = [rows * b // blocks for b in range(blocks + 1)]
    threads = max(1, min(thread_count(), blocks, total // MIN_ELEMENTS_PER_THREAD))
    if threads == 1:
        for b in range(blocks):
            work(bounds[b], bounds[b + 1])
        return
    claims = itertools.count()  # next() on it is atomic under the GIL

    def run() -> None:
        while (b := next(claims)) < blocks:
            work(bounds[b], bounds[b + 1])

    pool = _workers(threads - 1)
    futures = [pool.submit(run) for _ in range(threads - 1)]
    run()
    for future in futures:
        future.result()


def _workers(count: int) -> ThreadPoolExecutor:
    """A pool of at least ``count`` threads. A smaller pool is replaced but never shut down:
    another execution may be about to submit to it; its idle threads exit once the last
    reference to it is gone."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < count:
            _pool, _pool_size = ThreadPoolExecutor(count, "torch-nnapi"), count
        return _pool
