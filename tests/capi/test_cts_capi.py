"""Every shared CTS test through libneuralnetworks.so (ctypes), as through the Python API."""

from __future__ import annotations

import pytest

from torch_nnapi.capi.cts_backend import CApiBackend
from torch_nnapi.conformance import run_test
from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import kernel_for

from ..conformance.cts_cases import cts_params, operations_of


@pytest.fixture(scope="module")
def backend() -> CApiBackend:
    return CApiBackend()


@pytest.mark.parametrize("test", cts_params())
def test_cts(test, backend):
    missing = sorted(op for op in operations_of(test) if kernel_for(OperationType[op]) is None)
    if missing:
        pytest.skip(f"no host kernel yet for {', '.join(missing)}")
    outcome = run_test(test, backend)
    assert outcome.passed, outcome.message
