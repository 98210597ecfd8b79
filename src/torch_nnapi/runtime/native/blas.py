"""NumPy's BLAS, found in the process: its thread-count controls and its sgemm.

NumPy's wheels bundle OpenBLAS; its library is already loaded once NumPy is imported, and its
exports are found by name (with the ``scipy_`` prefix and ``64_`` suffix of the 64-bit-integer
build NumPy ships, or plain). The native float convolutions call its sgemm from the runtime's
own threads, one block each, so while the runtime executes OpenBLAS itself must stay on one
thread (``single_threaded``): otherwise its own pool would start under ours, and its workers,
which spin for a long time after each call, would compete with ours for the cores. Anything
else (MKL, Accelerate, no BLAS found): the float convolutions fall back to ``np.matmul``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

# (set, get) thread-count functions of OpenBLAS builds: NumPy's wheels, then plain ones.
_THREAD_FUNCTIONS = (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                     ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                     ("openblas_set_num_threads", "openblas_get_num_threads"))
# cblas_sgemm exports: (name, 64-bit integers).
_SGEMM_FUNCTIONS = (("scipy_cblas_sgemm64_", True), ("cblas_sgemm64_", True),
                    ("scipy_cblas_sgemm", False), ("cblas_sgemm", None))


@dataclass(frozen=True)
class OpenBlas:
    """One loaded OpenBLAS: its path, thread-count controls and sgemm (address, ILP64)."""

    path: str
    set_threads: Any  # ctypes functions, or None
    get_threads: Any
    sgemm: tuple[int, bool] | None


def _loaded_openblas_paths() -> list[str]:
    """Every OpenBLAS library mapped into this process, NumPy's own first."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps
                     if "openblas" in line.rsplit("/", 1)[-1].lower()}
    except OSError:
        return []
    numpy_libs = os.path.dirname(os.path.dirname(np.__file__))
    return sorted(paths, key=lambda p: (not p.startswith(numpy_libs), p))


def _describe(path: str) -> OpenBlas | None:
    try:
        library = ctypes.CDLL(path)
    except OSError:
        return None
    set_threads = get_threads = None
    for set_name, get_name in _THREAD_FUNCTIONS:
        if hasattr(library, set_name) and hasattr(library, get_name):
            set_threads, get_threads = getattr(library, set_name), getattr(library, get_name)
            set_threads.argtypes, set_threads.restype = [ctypes.c_int], None
            get_threads.argtypes, get_threads.restype = [], ctypes.c_int
            break
    sgemm = None
    for name, ilp64 in _SGEMM_FUNCTIONS:
        if hasattr(library, name):
            if ilp64 is None:
                ilp64 = _config_says_ilp64(library)
            sgemm = (ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0, ilp64)
            break
    return OpenBlas(path, set_threads, get_threads, sgemm)


def _config_says_ilp64(library: ctypes.CDLL) -> bool:
    config = getattr(library, "openblas_get_config", None)
    if config is None:
        return False
    config.restype = ctypes.c_char_p
    return b"USE64BITINT" in (config() or b"")


@functools.lru_cache(maxsize=1)
def openblas_libraries() -> tuple[OpenBlas, ...]:
    """The OpenBLAS libraries loaded in this process (NumPy's first)."""
    found = (_describe(path) for path in _loaded_openblas_paths())
    return tuple(lib for lib in found if lib is not None)


def numpy_sgemm() -> tuple[int, bool] | None:
    """(address, ILP64) of NumPy's cblas_sgemm, or None when NumPy's BLAS is not OpenBLAS."""
    libraries = openblas_libraries()
    return libraries[0].sgemm if libraries and libraries[0].sgemm else None


def _controllable() -> list[OpenBlas]:
    return [lib for lib in openblas_libraries()
            if lib.set_threads is not None and lib.get_threads is not None]


def thread_counts() -> list[int]:
    """The thread count of every loaded OpenBLAS."""
    return [lib.get_threads() for lib in _controllable()]


def set_thread_count(threads: int) -> None:
    """Sets every loaded OpenBLAS's thread count."""
    for lib in _controllable():
        lib.set_threads(threads)


def restore_thread_counts(counts: list[int]) -> None:
    """Gives every loaded OpenBLAS back the count ``thread_counts()`` returned."""
    for lib, count in zip(_controllable(), counts, strict=False):
        lib.set_threads(count)


_lock = threading.Lock()
_holders = 0
_saved: list[tuple[OpenBlas, int]] = []  # the counts to restore


@contextmanager
def single_threaded() -> Iterator[None]:
    """OpenBLAS on one thread while the body runs (nested and concurrent uses count; the last
    to leave restores the previous counts)."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = [(lib, lib.get_threads()) for lib in _controllable()]
            _saved = [(lib, count) for lib, count in _saved if count != 1]
            for lib, _ in _saved:
                lib.set_threads(1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                for lib, count in _saved:
                    lib.set_threads(count)
                _saved = []
