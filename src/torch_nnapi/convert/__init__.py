"""Layer 4: PyTorch -> NNAPI. ``convert(model, example_inputs, **options)`` returns a
TorchScript module that runs the model through PyTorch's NNAPI runtime.

The packages, data flowing down (docs/architecture.md has the map): ``capture/`` (the
front-ends and the graph they produce), ``builder/`` (the NNAPI model under construction and
the building blocks lowerings emit operations with), ``lowerings/`` (one module per PyTorch
op family), ``pipeline/`` (graph -> NNAPI Model: the lowering driver, layout choice, level
checks), ``torchscript/`` (the PyTorch Mobile back-end), ``fallback/`` (the CPU fallback),
``tools/`` (check, compare, bench, codegen, the host runner); ``api.py`` is the entry point.

``torch_nnapi.convert`` is both this package and the function: the package is callable
(``torch_nnapi.convert(model, x)``), so the name works whichever was imported first. torch
is imported only when something needs it, so the CLI's commands that read converted files
work without importing the converter.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# public name -> the module defining it (imported on first use)
_EXPORTS = {
    "convert": ".api", "convert_with_details": ".api", "Conversion": ".api",
    "CaptureError": ".errors", "ConversionError": ".errors", "FeatureLevelError": ".errors",
    "PartitionedConversion": ".fallback.convert",
    "check_model": ".tools.check", "compare_layers": ".tools.compare",
    "run_on_host": ".tools.host", "set_num_threads": ".tools.threads",
    "supported_ops": ".lowerings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


class _CallablePackage(types.ModuleType):
    def __call__(self, model: Any, example_inputs: Any = None, **options: Any) -> Any:
        from .api import convert

        return convert(model, example_inputs, **options)


sys.modules[__name__].__class__ = _CallablePackage
