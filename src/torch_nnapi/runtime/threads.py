"""One thread count for the host runtime's kernels and NumPy's BLAS (``torch_nnapi.convert``
adds PyTorch's intra-op threads to it).

The default is ``TORCH_NNAPI_NUM_THREADS`` when set, else the number of cores this process
may run on. The native kernels run on their own pool of that many threads, which sleeps
within some tens of microseconds of its last job, and they call NumPy's BLAS one thread at a
time from that pool (runtime.native.blas), so a model's execution runs on one pool only:
several pools on the same cores, each spinning while it waits for work, is what makes
threaded execution slower than a single thread. ``set_num_threads`` also sets NumPy's
OpenBLAS, for the rest of the process's NumPy work.
"""

from __future__ import annotations

import os
import warnings

from . import native
from .native import blas

ENVIRONMENT_VARIABLE = "TORCH_NNAPI_NUM_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_thread_count() -> int:
    """TORCH_NNAPI_NUM_THREADS when it is a positive integer, else the available cores."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not value:
        return available_cores()
    if value.isdigit() and int(value) > 0:
        return int(value)
    warnings.warn(f"{ENVIRONMENT_VARIABLE}={value!r} is not a positive integer; using"
                  f" {available_cores()} threads (the available cores)", stacklevel=2)
    return available_cores()


_threads = 1


def set_num_threads(threads: int) -> None:
    """Threads for the runtime's kernels and for NumPy's OpenBLAS."""
    global _threads
    if int(threads) < 1:
        raise ValueError(f"the thread count must be at least 1, got {threads}")
    _threads = int(threads)
    if native.available():
        native.module().set_threads(_threads)
    blas.set_thread_count(_threads)


def get_num_threads() -> int:
    """The runtime's thread count (set_num_threads, or the default)."""
    return _threads


def _apply_default() -> None:
    """The kernels' pool gets the default count when the runtime is imported; NumPy's BLAS is
    left as the process has it until set_num_threads."""
    global _threads
    _threads = default_thread_count()
    if native.available():
        native.module().set_threads(_threads)


_apply_default()
