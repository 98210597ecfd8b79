"""QUANTIZED_16BIT_LSTM: close to a float LSTM, the fixed quantization rules, shape errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

from ._single_op import I32, Q8, build, feed, out

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
