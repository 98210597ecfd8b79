"""An installed torch_nnapi (pip install ., as .ci/run does) has its native kernels, so the
tests that need them run instead of skipping."""

from __future__ import annotations

from pathlib import Path

import pytest

import torch_nnapi
from torch_nnapi.runtime import native

from ...conftest import PROJECT_ROOT


def test_installed_package_has_native_kernels():
    package = Path(torch_nnapi.__file__).resolve().parent
    if package.is_relative_to(PROJECT_ROOT / "src") and not native.available():
        pytest.skip("a source tree whose extensions were not built (python setup.py build_ext"
                    f" --inplace): {native.unavailable_reason()}")
    assert native.available(), native.unavailable_reason()
