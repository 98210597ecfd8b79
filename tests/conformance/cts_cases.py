"""The CTS cases the test suite runs, and the ones known to fail, each with its reason."""

from __future__ import annotations

import pytest

from torch_nnapi.conformance import VERSIONS, discover

from ..conftest import CTS_MISSING_REASON, cts_root
from .known_failures import KNOWN_FAILURES


def cts_params() -> list:
    root = cts_root()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=CTS_MISSING_REASON),
                             id="cts-missing")]
    params = []
    for test in discover(root, VERSIONS):
        marks = []
        if test.id in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[test.id], strict=True))
        params.append(pytest.param(test, marks=marks, id=test.id))
    return params
