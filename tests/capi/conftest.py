"""The C library under test, through ctypes."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

import torch_nnapi
from torch_nnapi.capi import LIBRARY_NAME, load

BUILD_HINT = "python setup.py build_ext --inplace"


@pytest.fixture(scope="session", autouse=True)
def built_library() -> None:
    """An installed package must have its library; a source tree (PYTHONPATH=src) may not
    have built it yet, and then these tests are skipped with the command that builds it."""
    package = Path(torch_nnapi.__file__).parent
    if (package / "capi" / LIBRARY_NAME).is_file():
        return
    if "site-packages" in package.parts:
        pytest.fail(f"{package} was installed without {LIBRARY_NAME}")
    pytest.skip(f"{LIBRARY_NAME} is not built in this source tree: run `{BUILD_HINT}`")


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    return load()
