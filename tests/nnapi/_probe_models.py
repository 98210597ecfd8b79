"""A finished NNAPI model mixing what device profiles tell apart: float and 8-bit operations,
NHWC and NCHW, large (weights) and small constants, per-channel scales."""

from __future__ import annotations

import numpy as np

from torch_nnapi.nnapi import FuseCode, Model, OperandType, OperationType

F32, Q8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_QUANT8_ASYMM


def _conv(m: Model, x: int, channels: int, nchw: bool, out_shape: tuple[int, ...]) -> int:
    """A float 3x3 CONV_2D (stride 1, implicit SAME padding) with a 16-channel filter of
    ``channels`` inputs: 16*3*3*channels float32 weights, above the probe file's value limit."""
    rng = np.random.default_rng(channels)
    weights = rng.standard_normal((16, 3, 3, channels)).astype(np.float32)
    w = m.add_constant(F32, weights)
    b = m.add_constant(F32, np.zeros(16, np.float32))
    scalars = [m.add_scalar(OperandType.INT32, v) for v in (1, 1, 1, int(FuseCode.RELU))]
    layout = m.add_scalar(OperandType.BOOL, nchw)
    out = m.add_operand(F32, out_shape)
    m.add_operation(OperationType.CONV_2D, [x, w, b, *scalars, layout], [out])
    return out


def mixed_model() -> Model:
    """Float convolutions in both layouts, LOGISTIC, CONCATENATION, QUANTIZE, an 8-bit ADD,
    DEQUANTIZE, a per-channel 8-bit CONV_2D and a float ADD: 9 operations."""
    m = Model()
    x = m.add_operand(F32, (1, 8, 8, 3))
    nhwc = _conv(m, x, 3, False, (1, 8, 8, 16))
    sig = m.add_operand(F32, (1, 8, 8, 16))
    m.add_operation(OperationType.LOGISTIC, [nhwc], [sig])
    y = m.add_operand(F32, (1, 3, 8, 8))
    nchw = _conv(m, y, 3, True, (1, 16, 8, 8))
    axis = m.add_scalar(OperandType.INT32, 3)
    cat = m.add_operand(F32, (1, 8, 8, 32))
    m.add_operation(OperationType.CONCATENATION, [nhwc, sig, axis], [cat])
    q = m.add_operand(Q8, (1, 8, 8, 32), 0.5, 128)
    m.add_operation(OperationType.QUANTIZE, [cat], [q])
    relu = m.add_scalar(OperandType.INT32, int(FuseCode.NONE))
    q2 = m.add_operand(Q8, (1, 8, 8, 32), 1.0, 128)
    m.add_operation(OperationType.ADD, [q, q, relu], [q2])
    deq = m.add_operand(F32, (1, 8, 8, 32))
    m.add_operation(OperationType.DEQUANTIZE, [q2], [deq])
    filt = m.add_operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, (4, 1, 1, 32))
    m.set_operand_symm_per_channel_quant_params(filt, [0.25, 0.5, 0.125, 1.0], 0)
    m.set_operand_value(filt, np.ones((4, 1, 1, 32), np.int8))
    bias = m.add_constant(OperandType.TENSOR_INT32, np.zeros(4, np.int32))
    scalars = [m.add_scalar(OperandType.INT32, v) for v in (1, 1, 1, int(FuseCode.NONE))]
    qconv = m.add_operand(Q8, (1, 8, 8, 4), 0.25, 100)
    m.add_operation(OperationType.CONV_2D, [q2, filt, bias, *scalars], [qconv])
    out = m.add_operand(F32, (1, 16, 8, 8))
    m.add_operation(OperationType.ADD, [nchw, nchw, relu], [out])
    m.identify_inputs_and_outputs([x, y], [out, qconv, deq])
    return m.finish()
