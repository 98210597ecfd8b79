"""The C library under test, through ctypes."""

from __future__ import annotations

import ctypes

import pytest

from torch_nnapi.capi import load


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    """libneuralnetworks.so of this installation (built by pip, or by
    ``python setup.py build_ext --inplace`` in a source tree)."""
    return load()
