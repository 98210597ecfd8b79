"""Splitting one large NumPy computation across a few threads.

BLAS already uses several threads for matmuls, but NumPy's element-wise loops and einsum run
on one; they release the GIL, though, so independent row blocks can run side by side. The
thread count comes from TORCH_NNAPI_NUM_THREADS, else OMP_NUM_THREADS, else the usable CPUs.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

# Below this many output elements per thread, starting threads costs more than it saves.
MIN_ELEMENTS_PER_THREAD = 1 << 16

_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def thread_count() -> int:
    for var in ("TORCH_NNAPI_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def for_row_blocks(rows: int, elements_per_row: int, work: Callable[[int, int], None]) -> None:
    """Calls work(start, stop) over [0, rows) split into blocks, one per thread."""
    global _pool, _pool_size
    threads = min(thread_count(), rows, max(1, rows * elements_per_row
                                            // MIN_ELEMENTS_PER_THREAD))
    if threads <= 1:
        work(0, rows)
        return
    if _pool is None or _pool_size < threads - 1:
        _pool, _pool_size = ThreadPoolExecutor(threads - 1, "torch-nnapi"), threads - 1
    bounds = [rows * t // threads for t in range(threads + 1)]
    futures = [_pool.submit(work, bounds[t], bounds[t + 1]) for t in range(1, threads)]
    work(bounds[0], bounds[1])
    for future in futures:
        future.result()
