"""The CTS cases the test suite runs, and the ones known to fail, each with its reason.

Android 11's suite (every version, both kinds) is the reference; it supersedes Android 10's,
whose vectors it fixes where the two disagree. Android 10's suite still holds ten specs that
Android 11's lacks (LRN variants, conv2d_v1_2, equal, maximum, minimum, prelu, quantize,
reduce_prod), so those run too, as ``android10/<version>/<name>``.
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from torch_nnapi.conformance import VERSIONS, CtsTest, discover

from ..conftest import CTS_MISSING_REASON, android10_cts_root, cts_root
from .known_failures import KNOWN_FAILURES

ANDROID10_PREFIX = "android10/"


@lru_cache(maxsize=1)
def cts_tests() -> tuple[tuple[str, CtsTest], ...]:
    """(test id, test) for every test the suite runs: Android 11's, then the Android 10 ones
    whose spec file Android 11's suite lacks."""
    root = cts_root()
    if root is None:
        return ()
    tests = [(t.id, t) for t in discover(root, VERSIONS)]
    older = android10_cts_root()
    if older is not None:
        superseded = {path.relative_to(root).as_posix() for path in root.glob("V*/*.json")}
        tests += [(ANDROID10_PREFIX + t.id, t) for t in discover(older, VERSIONS)
                  if t.path.relative_to(older).as_posix() not in superseded]
    return tuple(tests)


def cts_params() -> list:
    if cts_root() is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=CTS_MISSING_REASON),
                             id="cts-missing")]
    params = []
    for test_id, test in cts_tests():
        marks = []
        if test_id in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[test_id], strict=True))
        params.append(pytest.param(test, marks=marks, id=test_id))
    return params
