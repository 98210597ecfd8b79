"""FLOOR, ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT against NumPy references."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel
from torch_nnapi.nnapi import OperationType as Op
from torch_nnapi.runtime import Compilation

from ._single_op import F16, F32, I32, build, feed, out, run1

_REFERENCES: dict[Op, Callable[[np.ndarray], np.ndarray]] = {
    Op.FLOOR: np.floor, Op.ABS: np.abs, Op.EXP: np.exp, Op.LOG: np.log, Op.NEG: np.negative,
    Op.RSQRT: lambda x: 1.0 / np.sqrt(x), Op.SIN: np.sin, Op.SQRT: np.sqrt,
}
_POSITIVE_ONLY = {Op.LOG, Op.RSQRT, Op.SQRT}


@pytest.mark.parametrize("op", list(_REFERENCES), ids=lambda o: o.name)
@pytest.mark.parametrize("operand_type", [F32, F16], ids=["f32", "f16"])
def test_matches_numpy(op, operand_type):
    rng = np.random.default_rng(int(op))
    shape = (2, 3, 1, 4) if op == Op.FLOOR else (2, 3, 1, 2, 2)
    x = rng.uniform(0.1 if op in _POSITIVE_ONLY else -5, 5, shape)
    x = x.astype(np.float16 if operand_type == F16 else np.float32)
    got = run1(op, [feed(operand_type, x)], out(operand_type, x.shape))
    want = _REFERENCES[op](x.astype(np.float64)).astype(x.dtype)
    assert got.dtype == x.dtype
    tolerance = 1e-3 if operand_type == F16 else 1e-6
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_neg_int32_wraps_int32_min():
    x = np.array([0, 7, -7, 2**31 - 1, -(2**31)], np.int32)
    got = run1(Op.NEG, [feed(I32, x)], out(I32, (5,)))
    np.testing.assert_array_equal(got, [0, -7, 7, -(2**31 - 1), -(2**31)])


def test_out_of_domain_inputs_give_ieee_values():
    x = np.array([-1.0, 0.0, 4.0], np.float32)
    np.testing.assert_array_equal(run1(Op.LOG, [feed(F32, x)], out(F32, (3,)))[1:2], [-np.inf])
    assert np.isnan(run1(Op.SQRT, [feed(F32, x)], out(F32, (3,)))[0])
    np.testing.assert_array_equal(run1(Op.RSQRT, [feed(F32, x)], out(F32, (3,)))[1:],
                                  [np.inf, 0.5])


def test_floor_rejects_rank_5():
    with pytest.raises(BadDataError, match=r"FLOOR\): input 0 \(input\) must have rank 0..4"):
        Compilation(build(Op.FLOOR, [feed(F32, dims=(1, 1, 1, 1, 2))],
                          [out(F32, (1, 1, 1, 1, 2))]))


def test_dynamic_output_shape():
    compilation = Compilation(build(Op.EXP, [feed(F32, dims=(0, 0))], [out(F32, (0, 0))]))
    for shape in ((1, 3), (4, 2)):
        x = np.zeros(shape, np.float32)
        np.testing.assert_array_equal(compilation.run([x]).outputs[0], np.ones(shape))


def test_signature_types_and_levels():
    assert build(Op.FLOOR, [feed(F32, dims=(2,))], [out(F32, (2,))]).feature_level == \
        FeatureLevel.ANDROID_8_1
    assert build(Op.FLOOR, [feed(F16, dims=(2,))], [out(F16, (2,))]).feature_level == \
        FeatureLevel.ANDROID_10
    assert build(Op.ABS, [feed(I32, dims=(2,))], [out(I32, (2,))]).feature_level == \
        FeatureLevel.ANDROID_11
    with pytest.raises(BadDataError, match=r"SQRT\): input 0 \(input\) is TENSOR_INT32"):
        build(Op.SQRT, [feed(I32, dims=(2,))], [out(I32, (2,))])
    with pytest.raises(BadDataError, match=r"SQRT\): output 0 \(output\) is TENSOR_FLOAT16"):
        build(Op.SQRT, [feed(F32, dims=(2,))], [out(F16, (2,))])
