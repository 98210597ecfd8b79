"""The CTS cases the test suite runs, and the ones known to fail, each with its reason."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import VERSIONS, discover
from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime.registry import native_kernel_for

from ..conftest import CTS_MISSING_REASON, cts_root
from .known_failures import KNOWN_FAILURES


def cts_params(native_only: bool = False) -> list:
    """Every CTS test; with ``native_only``, those whose model has an operation with a native
    kernel (the others run the reference kernels whichever set is chosen)."""
    root = cts_root()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=CTS_MISSING_REASON),
                             id="cts-missing")]
    params = []
    for test in discover(root, VERSIONS):
        if native_only and not _has_native_kernel(test):
            continue
        marks = []
        if test.id in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[test.id], strict=True))
        params.append(pytest.param(test, marks=marks, id=test.id))
    return params


def _has_native_kernel(test) -> bool:
    spec_model, _ = test.load()
    return any(native_kernel_for(OperationType(op["code"])) is not None
               for op in spec_model["operations"])
