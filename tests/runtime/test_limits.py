"""Sizes and parameters refused before anything is allocated or computed (runtime/limits.py,
and the kernels' prepare): each case came from fuzzing, where it reached NumPy as a raw
exception (OP_FAILED) instead of BAD_DATA or OUT_OF_MEMORY."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    BadDataError,
    Model,
    OperandType,
    OperationType,
    OutOfMemoryError,
    ResultCode,
)
from torch_nnapi.runtime import Compilation
from torch_nnapi.runtime.limits import check_tensor_sizes, physical_memory
from torch_nnapi.runtime.quant import quantize_multiplier

F32 = OperandType.TENSOR_FLOAT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM


def _tile(multiples) -> Model:
    m = Model()
    x = m.add_operand(F32, (1, 1))
    mult = m.add_constant(OperandType.TENSOR_INT32, np.array(multiples, np.int32))
    out = m.add_operand(F32, (0, 0))
    m.add_operation(OperationType.TILE, [x, mult], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


def test_an_output_larger_than_memory_is_out_of_memory_at_compilation():
    with pytest.raises(OutOfMemoryError, match=r"operation 0 \(TILE\): outputs would need"
                                               r" .* GiB, more than this machine's") as e:
        Compilation(_tile([2**31 - 1, 2**31 - 1]))
    assert e.value.code == ResultCode.OUT_OF_MEMORY


def test_an_output_larger_than_memory_known_only_at_execution():
    m = Model()
    x = m.add_operand(F32, (0, 0))  # unknown until the input arrives
    mult = m.add_constant(OperandType.TENSOR_INT32, np.array([2**31 - 1, 2**31 - 1], np.int32))
    out = m.add_operand(F32, (0, 0))
    m.add_operation(OperationType.TILE, [x, mult], [out])
    m.identify_inputs_and_outputs([x], [out])
    compilation = Compilation(m.finish())
    with pytest.raises(OutOfMemoryError, match="TILE"):
        compilation.run([np.ones((1, 1), np.float32)])


def test_sizes():
    F32, U8 = np.dtype(np.float32), np.dtype(np.uint8)
    check_tensor_sizes([(2, 3), (4,)], [F32, U8], "output")
    with pytest.raises(BadDataError, match=r"output 1 would have dimensions \[4294967296\]"):
        check_tensor_sizes([(1,), (2**32,)], [F32, U8], "output")
    rows = physical_memory() // 2**20 // 2 + 1  # two of these exceed the memory
    with pytest.raises(OutOfMemoryError, match="outputs would need"):
        check_tensor_sizes([(rows, 2**20), (rows, 2**20)], [U8, U8], "output")


def _resize_by_scale(scale: float) -> Model:
    m = Model()
    x = m.add_operand(F32, (1, 2, 2, 1))
    width = m.add_scalar(OperandType.FLOAT32, scale)
    height = m.add_scalar(OperandType.FLOAT32, 1.0)
    out = m.add_operand(F32, (0, 0, 0, 0))
    m.add_operation(OperationType.RESIZE_BILINEAR, [x, width, height], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


@pytest.mark.parametrize("scale, message", [
    (float("inf"), "the width scale inf must be a positive finite number"),
    (float("nan"), "the width scale nan must be a positive finite number"),
    (-1.0, "the width scale -1 must be a positive finite number"),
    (3.4e38, "the width scale 3.4e[+]38 makes the width 2 too large for an NNAPI dimension"),
])
def test_resize_scales_are_checked_at_compilation(scale, message):
    with pytest.raises(BadDataError, match=r"operation 0 \(RESIZE_BILINEAR\): " + message):
        Compilation(_resize_by_scale(scale))


def _quantized_add(input_scale: float, output_scale: float) -> Model:
    m = Model()
    a = m.add_operand(Q8, (4,), input_scale, 0)
    b = m.add_operand(Q8, (4,), input_scale, 0)
    fuse = m.add_scalar(OperandType.INT32, 0)
    out = m.add_operand(Q8, (4,), output_scale, 0)
    m.add_operation(OperationType.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    return m.finish()


@pytest.mark.parametrize("input_scale, output_scale", [(1e-38, 1.0), (1e-44, 1.0)])
def test_extreme_quantization_scales_are_bad_data(input_scale, output_scale):
    compilation = Compilation(_quantized_add(input_scale, output_scale))
    with pytest.raises(BadDataError, match=r"operation 0 \(ADD\): quantized rescale multiplier"
                                           r" .* is outside \[2\^-32, 2\^31\)"):
        compilation.run([np.ones(4, np.uint8), np.ones(4, np.uint8)])


def test_quantize_multiplier_range():
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(2.0**-31)[1] == -30
    for outside in (2.0**-40, 2.0**40):
        with pytest.raises(BadDataError, match="outside"):
            quantize_multiplier(outside)


def test_a_fused_activation_with_a_tiny_output_scale_saturates():
    """RELU6's upper bound of 6 / 1e-30 quanta is far beyond 255: clamped, not an error."""
    from torch_nnapi.runtime.quant import activation_range_quantized

    assert activation_range_quantized(3, 1e-30, 0) == (0, 255)


def test_a_pool_stride_padding_beyond_memory_is_out_of_memory():
    """Fuzzing regression: SAME padding with stride and filter 2^31 - 1 pads a 2x4 input to
    some 2^31 columns; the padded input is refused before NumPy tries to allocate it."""
    m = Model()
    x = m.add_operand(F32, (1, 2, 4, 1))
    same = m.add_scalar(OperandType.INT32, 1)
    huge = m.add_scalar(OperandType.INT32, 2**31 - 1)
    fuse = m.add_scalar(OperandType.INT32, 0)
    out = m.add_operand(F32, (0, 0, 0, 0))
    m.add_operation(OperationType.AVERAGE_POOL_2D, [x, same, huge, huge, huge, huge, fuse],
                    [out])
    m.identify_inputs_and_outputs([x], [out])
    compilation = Compilation(m.finish())
    with pytest.raises(OutOfMemoryError, match=r"AVERAGE_POOL_2D.*padded input"):
        compilation.run([np.ones((1, 2, 4, 1), np.float32)])
