"""Every shared CTS test through the host runtime's Python API: all of them on the reference
kernels, and on the native kernels those whose model has an operation with a native kernel."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import PythonBackend, run_test
from torch_nnapi.runtime import native

from .cts_cases import cts_params

_REFERENCE = PythonBackend("reference")
_NATIVE = PythonBackend("native")


@pytest.mark.parametrize("test", cts_params())
def test_cts(test):
    outcome = run_test(test, _REFERENCE)
    assert outcome.passed, outcome.message


@pytest.mark.skipif(not native.available(), reason=native.unavailable_reason())
@pytest.mark.parametrize("test", cts_params(native_only=True))
def test_cts_native(test):
    outcome = run_test(test, _NATIVE)
    assert outcome.passed, outcome.message
