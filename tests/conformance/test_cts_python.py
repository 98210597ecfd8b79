"""Every shared CTS test through the host runtime's Python API."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import PythonBackend, run_test
from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import kernel_for

from .cts_cases import cts_params, operations_of

_BACKEND = PythonBackend()


@pytest.mark.parametrize("test", cts_params())
def test_cts(test):
    missing = sorted(op for op in operations_of(test) if kernel_for(OperationType[op]) is None)
    if missing:
        pytest.skip(f"no host kernel yet for {', '.join(missing)}")
    outcome = run_test(test, _BACKEND)
    assert outcome.passed, outcome.message
