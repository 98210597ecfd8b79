"""Layer 4: PyTorch -> NNAPI. ``convert(model, example_inputs, **options)`` returns a
TorchScript module that runs the model through PyTorch's NNAPI runtime.

``torch_nnapi.convert`` is both this package and the function: the package is callable
(``torch_nnapi.convert(model, x)``), so the name works whichever was imported first. torch
is imported only when something needs it, so ``torch_nnapi.convert.deserialize`` and the
CLI's other commands work without it.
"""

from __future__ import annotations

import sys
import types

__all__ = ["Conversion", "ConversionError", "FeatureLevelError", "PartitionedConversion",
           "convert", "convert_with_details", "run_on_host", "set_num_threads", "supported_ops"]


def __getattr__(name: str):
    if name in ("convert", "convert_with_details", "Conversion"):
        from . import api

        return getattr(api, name)
    if name in ("ConversionError", "FeatureLevelError"):
        from . import errors

        return getattr(errors, name)
    if name == "PartitionedConversion":
        from .fallback.convert import PartitionedConversion

        return PartitionedConversion
    if name == "run_on_host":
        from .tools.host import run_on_host

        return run_on_host
    if name == "set_num_threads":
        from .tools.threads import set_num_threads

        return set_num_threads
    if name == "supported_ops":
        from .lowerings import supported_ops

        return supported_ops
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallablePackage(types.ModuleType):
    def __call__(self, model, example_inputs=None, **options):
        from .api import convert

        return convert(model, example_inputs, **options)


sys.modules[__name__].__class__ = _CallablePackage
