"""One thread count for PyTorch, the host runtime's kernels and NumPy's BLAS.

``runtime.threads`` holds the runtime's and NumPy's; this adds PyTorch's intra-op pool, which
runs the converted module's own TorchScript (and eager PyTorch in ``bench`` and ``check``).
The CLI's ``--threads`` and ``torch_nnapi.convert.set_num_threads`` use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from ...runtime import threads as runtime_threads
from ...runtime.native import blas


def set_num_threads(threads: int) -> None:
    """PyTorch's intra-op threads, the runtime's kernels and NumPy's OpenBLAS: ``threads``."""
    runtime_threads.set_num_threads(threads)
    torch.set_num_threads(int(threads))


@contextmanager
def num_threads(threads: int | None) -> Iterator[None]:
    """The body runs with ``set_num_threads(threads)`` (nothing changes for None); the
    previous counts are restored afterwards."""
    if not threads:
        yield
        return
    previous_torch = torch.get_num_threads()
    previous_runtime = runtime_threads.get_num_threads()
    previous_blas = blas.thread_counts()
    set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous_torch)
        runtime_threads.set_num_threads(previous_runtime)
        blas.restore_thread_counts(previous_blas)
