"""Shared fixtures: where the conformance vectors are (``../shared/cts`` beside the project),
PyTorch's quantized engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def cts_root() -> Path | None:
    """The CTS vector directory, or None when it is not available on this machine."""
    configured = os.environ.get("TORCH_NNAPI_CTS_DIR")
    root = Path(configured) if configured else PROJECT_ROOT.parent / "shared" / "cts"
    return root if (root / "index.json").is_file() else None


CTS_MISSING_REASON = ("the NNAPI conformance vectors are not available: expected ../shared/cts"
                      " beside the project (or set TORCH_NNAPI_CTS_DIR)")


@pytest.fixture(scope="session")
def cts_dir() -> Path:
    root = cts_root()
    if root is None:
        pytest.skip(CTS_MISSING_REASON)
    return root


@pytest.fixture()
def qnnpack():
    """PyTorch's eager quantized kernels set to qnnpack (they round as NNAPI does, as on
    mobile) for the test, restored after it."""
    from torch_nnapi.convert.check import quantized_engine

    with quantized_engine("qnnpack"):
        yield
