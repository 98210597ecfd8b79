"""torchvision for the real-model tests, on the CPU-only torch of this project: the package's
own helper (``torch_nnapi.convert.tools.torchvision_ops``, which the CLI's loader uses too)
defines the operators its compiled extension cannot provide here."""

from __future__ import annotations

from types import ModuleType

import pytest

from torch_nnapi.convert.tools.torchvision_ops import (
    TorchvisionUnavailable,
    ensure_torchvision_operators,
)


def load_torchvision() -> ModuleType:
    """``torchvision``, importable and with its operators defined; skips when not installed."""
    try:
        return ensure_torchvision_operators()
    except TorchvisionUnavailable:
        pytest.skip("torchvision is not installed (pip install '.[torch,test]' installs it)")
