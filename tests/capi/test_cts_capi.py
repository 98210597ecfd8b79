"""Every shared CTS test through libneuralnetworks.so (ctypes), as through the Python API."""

from __future__ import annotations

import pytest

from torch_nnapi.capi.cts_backend import CApiBackend
from torch_nnapi.conformance import run_test

from ..conformance.cts_cases import cts_params


@pytest.fixture(scope="module")
def backend() -> CApiBackend:
    return CApiBackend()


@pytest.mark.parametrize("test", cts_params())
def test_cts(test, backend):
    outcome = run_test(test, backend)
    assert outcome.passed, outcome.message
