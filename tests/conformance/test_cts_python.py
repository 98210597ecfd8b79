"""Every shared CTS test through the host runtime's Python API."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import PythonBackend, run_test

from .cts_cases import cts_params

_BACKEND = PythonBackend()


@pytest.mark.parametrize("test", cts_params())
def test_cts(test):
    outcome = run_test(test, _BACKEND)
    assert outcome.passed, outcome.message
