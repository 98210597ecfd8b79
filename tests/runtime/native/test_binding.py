"""The C functions refuse wrong calls with ValueError (sizes, windows, element types,
parameters), before touching memory: nothing reaches a kernel that could read or write out of
bounds."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.runtime.native import conv, module

from ._compare import needs_native

pytestmark = needs_native

WINDOW = conv.window(1, 4, 4, 3, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1)


def test_depthwise_checks_every_length():
    x = np.zeros((1, 4, 4, 3), np.float32)
    taps, bias, out = np.zeros((3, 3, 3), np.float32), np.zeros(3, np.float32), \
        np.zeros((1, 4, 4, 3), np.float32)
    module().depthwise_f32(x, taps, bias, out, WINDOW, 1, 0.0, 6.0)
    with pytest.raises(ValueError, match="depthwise output: 48 elements expected, got 47"):
        module().depthwise_f32(x, taps, bias, out.reshape(-1)[:47], WINDOW, 1, 0.0, 6.0)
    with pytest.raises(ValueError, match="elements of 4 bytes expected, got 8"):
        module().depthwise_f32(x.astype(np.float64), taps, bias, out, WINDOW, 1, 0.0, 6.0)
    with pytest.raises(ValueError, match="window: 14 ints expected"):
        module().depthwise_f32(x, taps, bias, out, WINDOW[:-1], 1, 0.0, 6.0)
    with pytest.raises(ValueError, match="must be positive"):
        module().depthwise_f32(x, taps, bias, out, WINDOW[:8] + (0,) + WINDOW[9:], 1, 0.0, 6.0)


def test_outputs_must_be_writable_and_contiguous():
    x = np.zeros((1, 4, 4, 3), np.float32)
    out = np.zeros((1, 4, 4, 3), np.float32)
    out.setflags(write=False)
    with pytest.raises((ValueError, BufferError)):
        module().depthwise_f32(x, np.zeros((3, 3, 3), np.float32), None, out, WINDOW, 1, 0, 6)
    strided = np.zeros((1, 4, 4, 6), np.float32)[..., ::2]
    with pytest.raises((ValueError, BufferError)):
        module().depthwise_f32(strided, np.zeros((3, 3, 3), np.float32), None,
                               np.zeros((1, 4, 4, 3), np.float32), WINDOW, 1, 0, 6)


def test_quantized_plans_check_their_parameters_and_window():
    filt = np.zeros((2, 3, 3, 3), np.uint8)
    bias = np.zeros(2, np.int32)
    with pytest.raises(ValueError, match="multipliers must be positive, shifts in"):
        module().q8_conv_plan(filt, False, 0, bias, 2, 3, 3, 3, 1, 0, np.array([1], np.int32),
                              np.array([40], np.int32), 0, 0, 255)
    with pytest.raises(ValueError, match="zero points and bounds"):
        module().q8_conv_plan(filt, False, 0, bias, 2, 3, 3, 3, 1, 300, np.array([1 << 30],
                              np.int32), np.array([0], np.int32), 0, 0, 255)
    plan = conv.q8_conv(filt, 0, bias, 1, 0, conv.Requantization(0.5, 0, 0, 255))
    assert plan is not None
    x = np.zeros((1, 4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="does not match the plan"):
        plan.run(x, conv.window(1, 4, 4, 3, 4, 4, 1, 1, 1, 1, 1, 1, 0, 0),
                 np.zeros((1, 4, 4, 2), np.uint8))
    with pytest.raises(ValueError, match="output: 32 elements expected"):
        plan.run(x, WINDOW, np.zeros((1, 4, 4, 3), np.uint8))
    with pytest.raises(ValueError, match="invalid PyCapsule"):
        module().q8_conv(object(), x, np.zeros((1, 4, 4, 2), np.uint8), WINDOW)


def test_broadcast_strides_cannot_reach_past_an_input():
    a, b = np.zeros(6, np.float32), np.zeros(3, np.float32)
    out = np.zeros(6, np.float32)
    module().binary_f32(0, a, b, out, (1, 1, 2, 3), (0, 0, 3, 1), (0, 0, 0, 1), -1, 1)
    with pytest.raises(ValueError, match="strides reach past an input"):
        module().binary_f32(0, a, b, out, (1, 1, 2, 3), (0, 0, 3, 1), (0, 0, 3, 1), -1, 1)
    with pytest.raises(ValueError, match="innermost strides must be 0 or 1"):
        module().binary_f32(0, a, b, out, (1, 1, 3, 2), (0, 0, 2, 1), (0, 0, 1, 2), -1, 1)
    with pytest.raises(ValueError, match="unknown operation"):
        module().binary_f32(9, a, b, out, (1, 1, 2, 3), (0, 0, 3, 1), (0, 0, 0, 1), -1, 1)


def test_tables_and_softmax_check_their_sizes():
    x = np.zeros(5, np.uint8)
    with pytest.raises(ValueError, match="256 uint8 or float32"):
        module().lut(x, np.zeros(5, np.uint8), np.zeros(255, np.uint8))
    with pytest.raises(ValueError, match="exponents must be in"):
        module().softmax_q8_scale(x, np.zeros(5, np.uint8), np.zeros(256, np.int32), -10,
                                  np.zeros(1, np.int32), np.array([70], np.int32), (1, 5, 1))
