"""The quantized LSTM cells: QUANTIZED_16BIT_LSTM and (API 30) QUANTIZED_LSTM.

QUANTIZED_16BIT_LSTM, one LSTM step on uint8 activations with a 16-bit cell state, as
Android's reference does it: an integer fully connected layer produces each gate as a
16-bit fixed-point value with 3 integer bits (scale 2**-12), then gemmlowp fixed-point
logistic, tanh, products and a saturating add update the cell state (4 integer bits, scale
2**-11) and the output (uint8, scale 1/128, zero point 128). The fixed quantization of the
activations, state and biases is enforced by the signature's rules.

QUANTIZED_LSTM (``_qlstm``), on int8 activations with 8-bit symmetric weights and a 16-bit
cell state whose scale is a power of two, with CIFG, peephole, projection and layer
normalization optional, follows Android's integer kernel (TFLite's 8x8_16 LSTM).
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..context import KernelContext, Shape
from ..fixedpoint import (
    logistic,
    rescale,
    rounding_divide_by_pot,
    saturating_add,
    saturating_rounding_doubling_high_mul,
    tanh,
)
from ..quant import multiply_by_quantized_multiplier, quantize_multiplier
from ..registry import register
from ._qlstm import prepare_qlstm, run_qlstm
from ._recurrent import expect_shape, required_shape

_GATES = ("input", "forget", "cell", "output")
_ACTIVATION_ZERO_POINT = 128
_GATE_INTEGER_BITS, _STATE_INTEGER_BITS = 3, 4
_GATE_SCALE_INVERSE = 4096.0  # the fully connected output has scale 2**-12
_RAW_BITS = 16


def _prepare(ctx: KernelContext) -> list[Shape]:
    batch, input_size = required_shape(ctx, "input", 2)
    output_size = required_shape(ctx, "prev_output", 2)[1]
    expect_shape(ctx, "prev_output", (batch, output_size))
    for gate in _GATES:
        expect_shape(ctx, f"input_to_{gate}_weights", (output_size, input_size))
        expect_shape(ctx, f"recurrent_to_{gate}_weights", (output_size, output_size))
        expect_shape(ctx, f"{gate}_gate_bias", (output_size,))
    expect_shape(ctx, "prev_cell_state", (batch, output_size))
    return [(batch, output_size), (batch, output_size)]


def _gate_inputs(ctx: KernelContext) -> list[np.ndarray]:
    """The four gates' fully connected outputs (input, forget, cell, output), raw int16 with
    3 integer bits.

    Android's reference concatenates [input, previous output] but lays out each gate's
    weights as [recurrent | input] columns, so when the sizes differ the input meets the
    first columns of the recurrent weights. The conformance vectors expect exactly that
    pairing, so it is reproduced here rather than the textbook product.
    """
    activations = np.concatenate([ctx.input("input"), ctx.input("prev_output")], axis=1)
    activations = activations.astype(np.int64) - _ACTIVATION_ZERO_POINT
    # The signature's rules make every weight share one quantization and every bias another.
    weights_zero_point = ctx.input_quant("input_to_input_weights")[1]
    bias_scale = float(np.float32(ctx.input_quant("input_gate_bias")[0]))
    multiplier, shift = quantize_multiplier(_GATE_SCALE_INVERSE * bias_scale)
    gates = []
    for gate in _GATES:
        weights = np.concatenate([ctx.input(f"recurrent_to_{gate}_weights"),
                                  ctx.input(f"input_to_{gate}_weights")], axis=1)
        accumulator = activations @ (weights.astype(np.int64) - weights_zero_point).T
        accumulator += ctx.input(f"{gate}_gate_bias")
        scaled = multiply_by_quantized_multiplier(accumulator, multiplier, shift)
        gates.append(np.clip(scaled, -(1 << 15), (1 << 15) - 1))
    return gates


@register(Op.QUANTIZED_16BIT_LSTM, prepare=_prepare)
def quantized_16bit_lstm(ctx: KernelContext) -> list[np.ndarray]:
    input_in, forget_in, cell_in, output_in = _gate_inputs(ctx)

    def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Fixed-point product: the integer bits of the factors add up."""
        return saturating_rounding_doubling_high_mul(a, b, _RAW_BITS)

    input_gate = logistic(input_in, _GATE_INTEGER_BITS, _RAW_BITS)
    modulation = tanh(cell_in, _GATE_INTEGER_BITS, _RAW_BITS)
    forget_gate = logistic(forget_in, _GATE_INTEGER_BITS, _RAW_BITS)
    output_gate = logistic(output_in, _GATE_INTEGER_BITS, _RAW_BITS)
    prev_cell_state = ctx.input("prev_cell_state").astype(np.int64)
    new_state = saturating_add(
        rescale(mul(input_gate, modulation), 0, _STATE_INTEGER_BITS, _RAW_BITS),
        mul(forget_gate, prev_cell_state), _RAW_BITS)
    # tanh of the state reuses the 3-integer-bit form, saturating the state to [-8, 8].
    state_tanh = tanh(rescale(new_state, _STATE_INTEGER_BITS, _GATE_INTEGER_BITS, _RAW_BITS),
                      _GATE_INTEGER_BITS, _RAW_BITS)
    output = rounding_divide_by_pot(mul(output_gate, state_tanh), 8)
    output = np.clip(output, -128, 127) + _ACTIVATION_ZERO_POINT
    return [new_state.astype(np.int16), output.astype(np.uint8)]


@register(Op.QUANTIZED_LSTM, prepare=prepare_qlstm)
def quantized_lstm(ctx: KernelContext) -> list[np.ndarray]:
    return run_qlstm(ctx)
