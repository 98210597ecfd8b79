"""Layer 3: libneuralnetworks.so for Linux, the NNAPI C API of Android 11 over the runtime.

The library (built by the package's install, SONAME ``libneuralnetworks.so``) lives beside
this module with its header in ``include/``. Use it from C (``-lneuralnetworks``), from Python
with ctypes (``load()``), or let torch's NNAPI runtime pick it up: importing ``torch_nnapi``
loads it when no other libneuralnetworks.so can be loaded, and torch's
``dlopen("libneuralnetworks.so")`` then finds it by its SONAME.

This module stays cheap to import: the bridge (and NumPy) load on the library's first call.
"""

from __future__ import annotations

import ctypes
import os
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the runtime loads with the bridge, on the library's first call
    from ..runtime.partitioning import Plan

LIBRARY_NAME = "libneuralnetworks.so"
_HERE = Path(__file__).resolve().parent


def library_path() -> str:
    """The absolute path of this package's libneuralnetworks.so."""
    path = _HERE / LIBRARY_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: torch-nnapi was installed without building"
                                " its C library (reinstall with pip, or run"
                                " `python setup.py build_ext --inplace` in a source tree)")
    return str(path)


def include_path() -> str:
    """The directory of the library's NeuralNetworks.h."""
    return str(_HERE / "include")


@cache
def load() -> ctypes.CDLL:
    """The library through ctypes, with the argument and result types of all its functions
    declared (every pointer is a ``c_void_p``)."""
    from .api import FUNCTIONS

    library = ctypes.CDLL(library_path())
    for f in FUNCTIONS:
        function = getattr(library, f.name)
        function.argtypes = [p.ctype for p in f.parameters]
        function.restype = f.restype
    return library


def compilation_plan(compilation: int | ctypes.c_void_p) -> Plan:
    """Android's plan for a finished ANeuralNetworksCompilation of this process (the handle
    a C caller holds): its steps, devices and crossing tensors (``runtime.partitioning``)."""
    from ._compilation import compilation_of

    handle = compilation.value or 0 if isinstance(compilation, ctypes.c_void_p) else compilation
    plan = compilation_of(handle).plan
    if plan is None:
        from ..nnapi.errors import BadStateError

        raise BadStateError("the compilation is not finished")
    return plan


def preload_for_torch() -> None:
    """Loads this library when no other libneuralnetworks.so can be, so that torch's NNAPI
    runtime (which dlopens it by name) uses it. Does nothing when LIBNEURALNETWORKS_PATH names
    the library to use, or when the library was not built."""
    if os.environ.get("LIBNEURALNETWORKS_PATH"):
        return
    try:
        ctypes.CDLL(LIBRARY_NAME)  # another one on the search path (or ours, already loaded)
        return
    except OSError:
        pass
    with suppress(OSError):  # FileNotFoundError (not built) is an OSError too
        ctypes.CDLL(library_path())
