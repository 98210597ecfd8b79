"""The host runtime's native kernels: C for the operations that dominate real models.

``_kernels`` is a C extension built at ``pip install`` (setup.py) from the sources beside
this file. The NumPy kernels in ``runtime/ops`` stay the reference: quantized native kernels
are bit-exact with them, float ones agree within float32 rounding. Which set runs is chosen
per compilation (``Compilation(model, kernels=...)``), by default from
``TORCH_NNAPI_KERNELS`` (``native``, the default, or ``reference``). When the extension was
not built (a source checkout without ``pip install``), the reference kernels run and
``unavailable_reason()`` says why.

The modules of this package wrap the C functions with typed Python (one per family); the
kernels in ``runtime/ops`` call them.
"""

from __future__ import annotations

import contextlib
import os
from types import ModuleType

KERNEL_SETS = ("native", "reference")
ENVIRONMENT_VARIABLE = "TORCH_NNAPI_KERNELS"

try:
    from . import _kernels as _loaded  # type: ignore[attr-defined]  # C extension, no stub

    _REASON = ""
except ImportError as error:  # not built: the reference kernels serve
    _loaded = None
    _REASON = f"the native kernels are not built ({error}); run pip install"


def module() -> ModuleType:
    """The C extension; raises RuntimeError when it is not built."""
    if _loaded is None:
        raise RuntimeError(_REASON)
    loaded: ModuleType = _loaded
    return loaded


def available() -> bool:
    return _loaded is not None


def unavailable_reason() -> str:
    return _REASON


def check_kernel_set(kernels: str) -> str:
    if kernels not in KERNEL_SETS:
        raise ValueError(f"kernels must be one of {', '.join(KERNEL_SETS)}, got {kernels!r}")
    return kernels


def default_kernel_set() -> str:
    """TORCH_NNAPI_KERNELS, or ``native`` when it is unset or empty."""
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() or "native"
    if value not in KERNEL_SETS:
        raise ValueError(f"{ENVIRONMENT_VARIABLE}={value!r}: expected one of"
                         f" {', '.join(KERNEL_SETS)}")
    return value


def uses_native(kernels: str) -> bool:
    """Whether a compilation asking for ``kernels`` runs the native ones."""
    return kernels == "native" and _loaded is not None


def execution_scope() -> contextlib.AbstractContextManager[object]:
    """What an execution on the native kernels runs in: NumPy's OpenBLAS on one thread when
    the float convolutions call its sgemm from the kernels' own threads. With oneDNN's sgemm
    they never call OpenBLAS, and nothing is changed: setting OpenBLAS's thread count and
    back cost more than a small model's whole execution."""
    if _loaded is not None and _loaded.sgemm_library() == "numpy":
        return blas.single_threaded()
    return contextlib.nullcontext()


SGEMM_LIBRARIES = ("onednn", "numpy")


def sgemm_library() -> str:
    """What the float convolutions multiply with: "onednn", "numpy" (NumPy's OpenBLAS) or
    "none" (np.matmul from Python)."""
    return str(module().sgemm_library()) if _loaded is not None else "none"


def select_sgemm(library: str) -> None:
    """Multiplies with ``library`` (one of SGEMM_LIBRARIES; "onednn" only when it is
    installed), to compare them (bench/models.py --gemm, the tests)."""
    if library not in SGEMM_LIBRARIES:
        raise ValueError(f"sgemm library must be one of {', '.join(SGEMM_LIBRARIES)}")
    functions = onednn.sgemm_functions() if library == "onednn" else None
    if library == "onednn" and functions is None:
        raise ValueError("oneDNN is not installed (pip install onednn-cpu-gomp)")
    module().set_onednn(*(functions or (0, 0, 0)))


def _configure() -> None:
    """Gives the C kernels oneDNN's sgemm when it is installed, NumPy's (when NumPy's BLAS
    is OpenBLAS) behind it."""
    if _loaded is None:
        return
    sgemm = blas.numpy_sgemm()
    if sgemm is not None:
        _loaded.set_sgemm(*sgemm)
    functions = onednn.sgemm_functions()
    if functions is not None:
        _loaded.set_onednn(*functions)


# Last: they use module(); importing each family registers its kernels.
from . import (  # noqa: E402, F401
    blas,
    comparison,
    conv_kernels,
    elementwise,
    fused,
    fusions,
    normalization,
    onednn,
    pooling,
    recurrent,
    reduction,
    shape,
)

_configure()
