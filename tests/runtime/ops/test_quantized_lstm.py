"""QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM: close to a float LSTM, the quantization rules,
inconsistent parameters and shape errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

from ._single_op import I32, Q8, build, const, feed, out, run

Q16 = OperandType.TENSOR_QUANT16_SYMM
ACTIVATION_QUANT = (1 / 128, 128)
STATE_QUANT = (2**-11, 0)
WEIGHT_QUANT = (0.004, 100)


def _model(batch, input_size, output_size, *, input_quant=ACTIVATION_QUANT,
           weight_quants=None, bias_scale=None, output_quant=ACTIVATION_QUANT,
           weight_shape=None) -> Model:
    """The operation with every input a model input (no values: the tests feed them)."""
    weight_quants = weight_quants or [WEIGHT_QUANT] * 8
    bias_scale = bias_scale or WEIGHT_QUANT[0] / 128
    inputs = [feed(Q8, None, *input_quant, dims=(batch, input_size))]
    for k, quant in enumerate(weight_quants):
        shape = (output_size, input_size if k < 4 else output_size)
        inputs.append(feed(Q8, None, *quant, dims=weight_shape if k == 0 and weight_shape
                           else shape))
    inputs += [feed(I32, None, bias_scale, dims=(output_size,)) for _ in range(4)]
    inputs += [feed(Q16, None, *STATE_QUANT, dims=(batch, output_size)),
               feed(Q8, None, *ACTIVATION_QUANT, dims=(batch, output_size))]
    outputs = [out(Q16, (batch, output_size), *STATE_QUANT),
               out(Q8, (batch, output_size), *output_quant)]
    return build(OperationType.QUANTIZED_16BIT_LSTM, inputs, outputs)


def _random_inputs(rng, batch, input_size, output_size):
    x = rng.integers(64, 192, (batch, input_size), dtype=np.uint8)
    weights = [rng.integers(40, 160, (output_size, input_size if k < 4 else output_size),
                            dtype=np.uint8) for k in range(8)]
    biases = [rng.integers(-2000, 2000, output_size, dtype=np.int32) for _ in range(4)]
    state = rng.integers(-3000, 3000, (batch, output_size), dtype=np.int16)
    h = rng.integers(64, 192, (batch, output_size), dtype=np.uint8)
    return [x, *weights, *biases, state, h]


def _float_reference(inputs):
    """The float LSTM step with Android's pairing of the concatenated [input, output] with
    each gate's [recurrent | input] weight columns."""
    x, weights, biases, state, h = inputs[0], inputs[1:9], inputs[9:13], inputs[13], inputs[14]
    activations = (np.concatenate([x, h], axis=1).astype(np.float64) - 128) / 128
    scale, zero_point = WEIGHT_QUANT
    gates = []
    for k in range(4):
        w = (np.concatenate([weights[4 + k], weights[k]], axis=1).astype(np.float64)
             - zero_point) * scale
        gates.append(activations @ w.T + biases[k] * scale / 128)
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    i, g, f, o = sigmoid(gates[0]), np.tanh(gates[2]), sigmoid(gates[1]), sigmoid(gates[3])
    new_state = f * state * 2**-11 + i * g
    return new_state / 2**-11, o * np.tanh(new_state) * 128 + 128


@pytest.mark.parametrize("sizes", [(2, 3, 4), (1, 4, 4), (3, 5, 2)])
def test_quantized_lstm_is_close_to_the_float_lstm(sizes):
    rng = np.random.default_rng(sum(sizes))
    inputs = _random_inputs(rng, *sizes)
    state, output = Compilation(_model(*sizes)).run(inputs).outputs
    assert state.dtype == np.int16 and output.dtype == np.uint8
    want_state, want_output = _float_reference(inputs)
    np.testing.assert_allclose(state, want_state, atol=3)
    np.testing.assert_allclose(output, want_output, atol=1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(input_quant=(0.01, 128)), "input must have scale 0.0078125 and zero point 128"),
    (dict(weight_quants=[WEIGHT_QUANT] * 7 + [(0.004, 99)]),
     "recurrent_to_output_weights must have the scale and zero point of"
     " input_to_input_weights"),
    (dict(bias_scale=0.004), r"input_gate_bias scale must be weights scale / 128"),
    (dict(output_quant=(1 / 128, 127)), "output must have scale 0.0078125 and zero point 128"),
])
def test_quantized_lstm_quantization_rules(kwargs, message):
    with pytest.raises(BadDataError, match=message):
        _model(2, 3, 4, **kwargs)


def test_quantized_lstm_weight_shape_error():
    model = _model(2, 3, 4, weight_shape=(4, 2))
    inputs = _random_inputs(np.random.default_rng(0), 2, 3, 4)
    inputs[1] = inputs[1][:, :2]
    with pytest.raises(BadDataError, match=r"input 1 \(input_to_input_weights\) must have"
                                           r" shape \[4, 3\], got \[4, 2\]"):
        Compilation(model)


# --------------------------------------------------------------------------------------------
# QUANTIZED_LSTM (API 30): int8 activations, 8-bit symmetric weights, 16-bit cell state

Q8_SIGNED = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
Q8_SYMM = OperandType.TENSOR_QUANT8_SYMM
FLOAT = OperandType.FLOAT32
INT = OperandType.INT32
_GATES = ("input", "forget", "cell", "output")
_X_QUANT, _H_QUANT, _CELL_SCALE, _W_SCALE = (0.02, 3), (1 / 128, -2), 2**-11, 0.01


def _qlstm_inputs(rng, batch=2, input_size=3, units=4, *, cifg=False, bias_scale=None,
                  cell_scale=_CELL_SCALE, layer_norm=(), input_gate_bias=None):
    """The 32 inputs (constants but for input, output state and cell state, which are fed),
    without peephole or projection; gate pre-activations at scale 2**-12 (what the 16-bit
    fixed-point sigmoid reads)."""
    gates = _GATES[1:] if cifg else _GATES
    weights = {f"{source}_{g}": rng.integers(-60, 61, (units, size)).astype(np.int8)
               for source, size in (("input_to", input_size), ("recurrent_to", units))
               for g in gates}
    biases = {g: rng.integers(-2000, 2001, units).astype(np.int32) for g in gates}
    x = rng.integers(-100, 101, (batch, input_size)).astype(np.int8)
    h = rng.integers(-100, 101, (batch, units)).astype(np.int8)
    c = rng.integers(-3000, 3001, (batch, units)).astype(np.int16)
    operands = [feed(Q8_SIGNED, x, *_X_QUANT)]
    for source in ("input_to", "recurrent_to"):
        for g in _GATES:
            w = weights.get(f"{source}_{g}")
            operands.append(const(Q8_SYMM, w, _W_SCALE, dims=None if w is not None
                                  else (units, input_size)))
    operands += [const(Q16, None, 1.0, dims=(units,)) for _ in range(3)]  # no peephole
    for g in _GATES:
        b = biases.get(g) if g != "input" or input_gate_bias is None else input_gate_bias
        operands.append(const(I32, b, 0.0, dims=None if b is not None else (units,)))
    operands += [const(Q8_SYMM, None, 1.0, dims=(units, units)),
                 const(I32, None, dims=(units,)),
                 feed(Q8_SIGNED, h, *_H_QUANT), feed(Q16, c, cell_scale)]
    for g in _GATES:
        w = np.full(units, 16384, np.int16) if g in layer_norm else None
        operands.append(const(Q16, w, 2**-14, dims=None if w is not None else (units,)))
    operands += [const(FLOAT, 0.0), const(FLOAT, 0.0)]
    operands += [const(FLOAT, 2.0**-12) for _ in _GATES]
    operands += [const(INT, _H_QUANT[1]), const(FLOAT, _H_QUANT[0])]
    outputs = [out(Q8_SIGNED, (batch, units), *_H_QUANT), out(Q16, (batch, units), cell_scale),
               out(Q8_SIGNED, (batch, units), *_H_QUANT)]
    return operands, outputs, (weights, biases, x, h, c)


def _float_qlstm(weights, biases, x, h, c, cifg):
    def real(q, scale, zero=0):
        return (q.astype(np.float64) - zero) * scale

    xr, hr, cr = real(x, *_X_QUANT), real(h, *_H_QUANT), real(c, _CELL_SCALE)
    pre = {g: xr @ real(weights[f"input_to_{g}"], _W_SCALE).T
           + hr @ real(weights[f"recurrent_to_{g}"], _W_SCALE).T
           + real(biases[g], _W_SCALE * _X_QUANT[0]) for g in biases}
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    forget = sigmoid(pre["forget"])
    input_gate = 1 - forget if cifg else sigmoid(pre["input"])
    cell = forget * cr + input_gate * np.tanh(pre["cell"])
    hidden = sigmoid(pre["output"]) * np.tanh(cell)
    # Android (and TFLite) subtract hidden_state_zero_point where one would add it.
    return np.round(hidden / _H_QUANT[0]) - _H_QUANT[1], np.round(cell / _CELL_SCALE)


@pytest.mark.parametrize("cifg", [False, True])
def test_quantized_lstm_is_close_to_a_float_lstm(cifg):
    """Without layer normalization the gate biases join the products (TFLite's cell; Android
    drops them there)."""
    rng = np.random.default_rng(3)
    operands, outputs, reference = _qlstm_inputs(rng, cifg=cifg)
    state_out, cell_out, output = run(OperationType.QUANTIZED_LSTM, operands, outputs)
    weights, biases, x, h, c = reference
    want_hidden, want_cell = _float_qlstm(weights, biases, x, h, c, cifg)
    np.testing.assert_array_equal(state_out, output)
    assert np.abs(output.astype(np.int64) - want_hidden).max() <= 2
    assert np.abs(cell_out.astype(np.int64) - want_cell).max() <= 8


@pytest.mark.parametrize("change, message", [
    (dict(cifg=True, input_gate_bias=np.zeros(4, np.int32)),
     r"CIFG \(the input gate's parameters\)"),
    (dict(cell_scale=0.001), r"input 19 \(cell_state_in\) scale 0.001 must be a power of two"),
    (dict(layer_norm=("forget", "cell")), r"layer normalization: .* must all have values"),
])
def test_quantized_lstm_rejects_inconsistent_parameters(change, message):
    operands, outputs, _ = _qlstm_inputs(np.random.default_rng(4), **change)
    with pytest.raises(BadDataError, match=r"operation 0 \(QUANTIZED_LSTM\): " + message):
        Compilation(build(OperationType.QUANTIZED_LSTM, operands, outputs))
