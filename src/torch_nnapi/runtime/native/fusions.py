"""Native fusions (registry.register_fusion): two operations computed by one runner.

MUL then REDUCE_SUM over one axis is how a matrix product of two computed tensors reaches
NNAPI (Android 10 has no batched matmul): the product of every pair, [..., m, k, n], summed
over k. When the MUL's only reader is the REDUCE_SUM, the pair runs as one batched matrix
product on NumPy's BLAS, without the intermediate tensor; float32 only, the sums within
float32 rounding of the reference's.
"""

from __future__ import annotations

import math

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import reduction
from ..registry import Runner, register_fusion
from .planning import constant_parameters

_F32 = OperandType.TENSOR_FLOAT32


def _roles(a: tuple[int, ...], b: tuple[int, ...], axis: int) -> list[str] | None:
    """Per axis of the broadcast product: "batch" (both run along it), "a" or "b" (only one
    does), "" (size 1 in both); None when the reduced axis is not shared."""
    roles = []
    for d, (x, y) in enumerate(zip(a, b, strict=True)):
        if x == y and x != 1:
            roles.append("batch" if d != axis else "k")
        elif x != 1 and y == 1:
            roles.append("a")
        elif y != 1 and x == 1:
            roles.append("b")
        else:
            roles.append("k" if d == axis else "")
    return roles if roles[axis] == "k" else None


@register_fusion(Op.MUL, Op.REDUCE_SUM)
def product_sum(mul: KernelContext, reduce_sum: KernelContext) -> Runner | None:
    if mul.input_type("input0") != _F32 or not constant_parameters(mul, "input0", "input1") \
            or mul.scalar("fuse_code") != 0 or not constant_parameters(reduce_sum):
        return None
    axes, _, out_shape = reduction.reduce_plan(reduce_sum)
    if len(axes) != 1:
        return None
    a_shape, b_shape = mul.input_shape("input0"), mul.input_shape("input1")
    rank = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b_shape = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    roles = _roles(a_shape, b_shape, axes[0])
    if roles is None:
        return None
    batch = [d for d, r in enumerate(roles) if r == "batch"]
    only_a = [d for d, r in enumerate(roles) if r == "a"]
    only_b = [d for d, r in enumerate(roles) if r == "b"]
    ones = [d for d, r in enumerate(roles) if r == ""]
    k = axes[0]
    sizes = [max(x, y) for x, y in zip(a_shape, b_shape, strict=True)]
    batches = math.prod(sizes[d] for d in batch)
    m, n = math.prod(sizes[d] for d in only_a), math.prod(sizes[d] for d in only_b)
    # The result [batch..., a..., b...] back in the product's order, without k.
    kept = batch + only_a + only_b + ones
    order = [d for d in range(rank) if d != k]
    inverse = [kept.index(d) for d in order]
    product_shape = [sizes[d] for d in kept]
    a_order, b_order = batch + only_a + [k] + only_b + ones, batch + [k] + only_b + only_a + ones

    def run(a: np.ndarray, b: np.ndarray, *_: object) -> np.ndarray:
        left = a.reshape(a_shape).transpose(a_order).reshape(batches, m, sizes[k])
        right = b.reshape(b_shape).transpose(b_order).reshape(batches, sizes[k], n)
        result = np.matmul(left, right).reshape(product_shape).transpose(inverse)
        return np.ascontiguousarray(result).reshape(out_shape)

    return run
