"""The conformance runner's own reporting: a mismatch names the first differing index and
values as a reader writes them."""

from __future__ import annotations

import numpy as np

from torch_nnapi.conformance.runner import _compare_values
from torch_nnapi.nnapi import OperandType


def test_mismatch_names_index_and_values_plainly():
    want = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float16)
    got = want.copy()
    got[1, 0] = 7.5
    message = _compare_values(got, want, OperandType.TENSOR_FLOAT16, relaxed=False,
                              test_name="add")
    assert message == "1 of 4 values differ; at [1, 0] got 7.5, expected 3.0"


def test_quantized_values_within_one_quantum_agree():
    want = np.array([10, 20], dtype=np.uint8)
    assert _compare_values(want + 1, want, OperandType.TENSOR_QUANT8_ASYMM, relaxed=False,
                           test_name="add") is None
    message = _compare_values(want + 2, want, OperandType.TENSOR_QUANT8_ASYMM, relaxed=False,
                              test_name="add")
    assert message == "2 of 2 values differ; at [0] got 12, expected 10"
