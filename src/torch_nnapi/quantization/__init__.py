"""PT2E quantization for NNAPI: ``torch_nnapi.quantize(model, example_inputs, calibration)``.

``policy`` (what NNAPI runs in 8 bits, per op and feature level) needs no torch; the rest
needs torch and torchao, imported when first used.
"""

from __future__ import annotations

from typing import Any

_API = ("NnapiQuantizer", "Quantized", "calibrate", "convert_prepared", "prepare",
        "prepare_qat", "quantize", "quantize_with_details")

__all__ = list(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
