"""oneDNN's sgemm for the float convolutions and FULLY_CONNECTED, when it is installed.

oneDNN (the library behind PyTorch's own CPU speed) multiplies the float32 matrices of
transformers and modern CNNs 1.15 to 1.4 times as fast as the OpenBLAS NumPy ships on this
project's x86-64 machines (bench/models.py); its PyPI build ``onednn-cpu-gomp`` is a
dependency of torch-nnapi on x86-64 Linux. Its library, installed into the environment's
``lib`` folder, is loaded with ctypes (no build-time dependency: the C kernels receive the
function addresses, as they do NumPy's sgemm, see blas.c); without it the kernels multiply
with NumPy's BLAS. The kernels call it from their own threads, one block each, with the
calling thread's OpenMP thread count set to 1 for the call, so that oneDNN's OpenMP runtime
never starts a second pool of threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import site
import sys

LIBRARY = "libdnnl.so.3"
# The C functions the kernels call: oneDNN's sgemm and its OpenMP runtime's thread counts.
_FUNCTIONS = ("dnnl_sgemm", "omp_set_num_threads", "omp_get_max_threads")


def library_candidates() -> list[str]:
    """Where a pip-installed oneDNN may be: the lib folders of this environment, of the base
    Python and of the user's site, then the dynamic loader's search."""
    folders = [sys.prefix, sys.base_prefix, site.getuserbase()]
    paths = [os.path.join(folder, "lib", LIBRARY) for folder in folders]
    found = ctypes.util.find_library("dnnl")
    return [p for p in dict.fromkeys(paths) if os.path.exists(p)] + ([found] if found else [])


@functools.lru_cache(maxsize=1)
def sgemm_functions() -> tuple[int, int, int] | None:
    """The addresses of dnnl_sgemm, omp_set_num_threads and omp_get_max_threads, or None
    when no oneDNN 3 is found."""
    for path in library_candidates():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        if not all(hasattr(library, name) for name in _FUNCTIONS) or _major(library) != 3:
            continue
        addresses = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0
                     for name in _FUNCTIONS]
        return addresses[0], addresses[1], addresses[2]
    return None


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


def _major(library: ctypes.CDLL) -> int:
    """oneDNN's major version (dnnl_sgemm's signature is that of version 3)."""
    version = getattr(library, "dnnl_version", None)
    if version is None:
        return 0
    version.restype = ctypes.POINTER(_Version)
    return int(version().contents.major)
