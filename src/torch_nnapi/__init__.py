"""torch-nnapi: take PyTorch models to Android's Neural Networks API and run them on Linux.

Layers, data flowing down: ``nnapi`` (vocabulary, signatures, Model), ``runtime`` (host
reference runtime, NumPy only), ``capi`` (libneuralnetworks.so for Linux), ``convert``
(PyTorch -> NNAPI), ``cli`` (the ``torch-nnapi`` command).
"""

from typing import Any

__version__ = "0.1.0"


def library_path() -> str:
    """Where torch-nnapi's libneuralnetworks.so (the NNAPI C API for Linux) is."""
    from .capi import library_path as path

    return path()


def __getattr__(name: str) -> Any:
    """``torch_nnapi.convert(...)``, ``quantize(...)``, ``trace_to_code(...)`` and
    ``partition_plan(...)`` without importing torch until one is used."""
    import importlib

    if name == "convert":
        return importlib.import_module(".convert", __name__)  # a callable package
    if name == "quantize":
        return importlib.import_module(".quantization.api", __name__).quantize
    if name == "trace_to_code":
        return importlib.import_module(".convert.tools.codegen", __name__).trace_to_code
    if name == "partition_plan":
        return importlib.import_module(".convert.tools.device_plan", __name__).partition_plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# torch's NNAPI runtime dlopens "libneuralnetworks.so": make it find ours when there is no
# other (cheap: loading the library starts nothing until its first call).
from .capi import preload_for_torch as _preload_for_torch  # noqa: E402

_preload_for_torch()
