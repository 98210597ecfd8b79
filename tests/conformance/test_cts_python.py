"""Every CTS test the suite knows through the host runtime's Python API, once on the reference
kernels (the oracle) and once on the native ones (TORCH_NNAPI_KERNELS's two sets)."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import PythonBackend, run_test
from torch_nnapi.runtime import native

from .cts_cases import cts_params

_BACKENDS = {"reference": PythonBackend("reference"), "native": PythonBackend("native")}
_KERNEL_SETS = [
    pytest.param("reference", id="reference"),
    pytest.param("native", id="native", marks=pytest.mark.skipif(
        not native.available(), reason=native.unavailable_reason())),
]


@pytest.mark.parametrize("kernels", _KERNEL_SETS)
@pytest.mark.parametrize("test", cts_params())
def test_cts(test, kernels):
    outcome = run_test(test, _BACKENDS[kernels])
    assert outcome.passed, outcome.message
