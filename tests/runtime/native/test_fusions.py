"""Native fusions: MUL then REDUCE_SUM (a matrix product of two computed tensors) runs as one
batched matrix product once the shapes are the compile-time ones, agreeing with the
reference kernels; a MUL read by anything else, or kept intermediates, are not fused."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

from ._compare import assert_close, needs_native

pytestmark = needs_native
F32 = OperandType.TENSOR_FLOAT32


def product_sum_model(a_shape, b_shape, axis: int, keep: bool, extra_reader: bool = False):
    """a * b summed over ``axis``; with ``extra_reader`` the product is also a model output."""
    m = Model()
    a, b = m.add_operand(F32, a_shape), m.add_operand(F32, b_shape)
    product_shape = tuple(max(x, y) for x, y in zip(a_shape, b_shape, strict=True))
    product = m.add_operand(F32, product_shape)
    m.add_operation(OperationType.MUL, [a, b, m.add_scalar(OperandType.INT32, 0)], [product])
    out_shape = tuple(1 if d == axis else s for d, s in enumerate(product_shape)) if keep else \
        tuple(s for d, s in enumerate(product_shape) if d != axis)
    out = m.add_operand(F32, out_shape)
    m.add_operation(OperationType.REDUCE_SUM,
                    [product, m.add_constant(OperandType.TENSOR_INT32,
                                             np.array([axis], np.int32)),
                     m.add_scalar(OperandType.BOOL, keep)], [out])
    m.identify_inputs_and_outputs([a, b], [out, product] if extra_reader else [out])
    return m.finish()


CASES = [  # (a, b, reduced axis): attention's two products, and others
    ((4, 32, 8, 1), (4, 1, 8, 32), 2),
    ((4, 32, 32, 1), (4, 1, 32, 8), 2),
    ((2, 3, 5), (2, 3, 1), 1),
    ((1, 6, 1), (7, 6, 4), 1),
    ((3, 1, 5, 2), (1, 4, 5, 2), 2),
]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("a_shape, b_shape, axis", CASES)
def test_product_sum_runs_as_one_matrix_product(a_shape, b_shape, axis, keep):
    rng = np.random.default_rng(0)
    model = product_sum_model(a_shape, b_shape, axis, keep)
    values = [rng.standard_normal(a_shape).astype(np.float32),
              rng.standard_normal(b_shape).astype(np.float32)]
    expected = Compilation(model, kernels="reference").run(values).outputs
    compilation = Compilation(model, kernels="native")
    first = compilation.run(values).outputs  # plans, the MUL still made
    mul, reduce_sum = compilation.steps
    assert reduce_sum.fused_runner is not None and mul.fused_away
    fused = compilation.run(values).outputs  # one matrix product
    assert_close(expected, first)
    assert_close(expected, fused)
    kept = compilation.run(values, keep_intermediates=True)  # every step the full way
    assert_close(expected, kept.outputs)
    assert kept.value(mul.operation.outputs[0]).shape == tuple(
        max(x, y) for x, y in zip(a_shape, b_shape, strict=True))


def test_a_product_read_elsewhere_is_not_fused():
    model = product_sum_model((2, 3, 1), (2, 1, 4), 1, False, extra_reader=True)
    compilation = Compilation(model, kernels="native")
    values = [np.ones((2, 3, 1), np.float32), np.ones((2, 1, 4), np.float32)]
    for _ in range(2):
        outputs = compilation.run(values).outputs
    assert compilation.steps[1].fusion is None
    np.testing.assert_array_equal(outputs[0], np.full((2, 4), 3, np.float32))
