"""Runs one operation on both kernel sets and compares: the reference kernels (NumPy, the
oracle) and the native ones, checking that the native kernel handled the operation rather
than leaving it to the reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from torch_nnapi.nnapi import OperandType, OperationType
from torch_nnapi.runtime import Compilation, native
from torch_nnapi.runtime.registry import NATIVE_KERNELS

from ..ops._single_op import Operand, build, fed_values

needs_native = pytest.mark.skipif(not native.available(), reason=native.unavailable_reason())

UINT8 = OperandType.TENSOR_QUANT8_ASYMM
INT8 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED


def signed_form(operands: Sequence[Operand]) -> list[Operand]:
    """The operands with every uint8 one (TENSOR_QUANT8_ASYMM) made int8
    (TENSOR_QUANT8_ASYMM_SIGNED, Android 11): values and zero point 128 down, so the same
    randomized case exercises the signed form of a kernel (fixed output zero points, 0 for
    LOGISTIC and SOFTMAX, 128 for TANH, become NNAPI's signed ones, -128 and 0)."""
    signed = []
    for operand in operands:
        if operand.type != UINT8:
            signed.append(operand)
            continue
        values = operand.array()
        if values is not None:
            values = (values.astype(np.int16) - 128).astype(np.int8)
        signed.append(replace(operand, type=INT8, value=values,
                              zero_point=operand.zero_point - 128))
    return signed


def run_both(monkeypatch, op: OperationType, inputs: Sequence[Operand],
             outputs: Sequence[Operand], *, handled: bool = True, signed: bool = False
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(reference outputs, native outputs). With ``handled``, fails unless the native kernel
    computed the result itself (without, it must have left it to the reference). The native
    compilation runs twice, the second time through the runner its first run planned.
    ``signed``: the uint8 operands made int8 first (``signed_form``)."""
    if signed:
        inputs, outputs = signed_form(inputs), signed_form(outputs)
    model = build(op, inputs, outputs)
    fed = fed_values(inputs)
    expected = Compilation(model, kernels="reference").run(fed).outputs
    answers: list[bool] = []
    planner = NATIVE_KERNELS[op]

    def recording(ctx):
        runner = planner(ctx)
        answers.append(runner is not None)
        return runner

    monkeypatch.setitem(NATIVE_KERNELS, op, recording)
    compilation = Compilation(model, kernels="native")
    actual = compilation.run(fed).outputs
    again = compilation.run(fed).outputs
    assert answers == [handled], f"native kernel answered {answers}, expected [{handled}]"
    for first, second in zip(actual, again, strict=True):
        np.testing.assert_array_equal(first, second)
    return expected, actual


def assert_same(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> None:
    """Bit-exact: same dtype, shape and values (NaN where NaN)."""
    for e, a in zip(expected, actual, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)


def assert_close(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                 rtol: float = 1e-5) -> None:
    """Float results summed in another order: within float32 rounding of the largest value."""
    for e, a in zip(expected, actual, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        finite = np.abs(e[np.isfinite(e)])
        scale = float(np.max(finite, initial=1.0))
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * scale)
