"""Native LSTM and RNN steps against the reference kernels on randomized cells: every LSTM
variant (CIFG, peephole, projection with and without bias, layer normalization, clipping,
each activation, gates with all-zero input or recurrent weights), batches of 1 to 4, weights
as constants (as converted layers have them) and as model inputs (as the conformance tests
feed them); results within float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType

from ..ops._recurrent_support import lstm_params, lstm_weight_inputs, operands
from ..ops._single_op import f16, f32, i32
from ._compare import assert_close, needs_native, run_both

pytestmark = needs_native

LSTM_ACTIVATIONS = (0, 1, 3, 4, 6)


def _lstm_case(rng, constant_weights: bool):
    """A random LSTM step: (inputs, outputs) operands."""
    input_size, cells, batch = (int(v) for v in rng.integers(1, 9, 3))
    batch = min(batch, 4)
    projection = rng.random() < 0.4
    output_size = int(rng.integers(1, 9)) if projection else None
    p = lstm_params(rng, input_size, cells, output_size, cifg=bool(rng.random() < 0.4),
                    peephole=bool(rng.random() < 0.5), layer_norm=bool(rng.random() < 0.3),
                    projection_bias=bool(rng.random() < 0.5))
    if projection and output_size == cells:  # lstm_params only projects to another size
        p["proj"] = rng.uniform(-0.5, 0.5, (cells, cells)).astype(np.float32)
    for key in p:  # zero blocks, whose products the native kernel skips
        if key[0] in "wr" and rng.random() < 0.25:
            p[key] = np.zeros_like(p[key])
    out_size = p["proj"].shape[0] if "proj" in p else cells
    x = rng.uniform(-2, 2, (batch, input_size)).astype(np.float32)
    h = rng.uniform(-1, 1, (batch, out_size)).astype(np.float32)
    c = rng.uniform(-1, 1, (batch, cells)).astype(np.float32)
    cell_clip = float(rng.choice([0.0, 0.5, 3.0]))
    proj_clip = float(rng.choice([0.0, 0.4])) if "proj" in p else 0.0
    values = [x, *lstm_weight_inputs(p), h, c, i32(int(rng.choice(LSTM_ACTIVATIONS))),
              f32(cell_clip), f32(proj_clip)]
    if any(k.startswith("l") for k in p):
        values += [p.get("l" + g) for g in "ifco"]
    inputs, outputs = operands(values, 4, constant_weights=constant_weights)
    if constant_weights:  # the states are computed too in an unrolled layer
        for at in (18, 19):
            inputs[at] = operands([values[at]], 0)[0][0]
    return inputs, outputs


@pytest.mark.parametrize("constant_weights", [True, False], ids=["constant", "inputs"])
@pytest.mark.parametrize("seed", range(40))
def test_lstm_step(monkeypatch, seed, constant_weights):
    inputs, outputs = _lstm_case(np.random.default_rng(seed), constant_weights)
    expected, actual = run_both(monkeypatch, OperationType.LSTM, inputs, outputs)
    assert_close(expected, actual, rtol=2e-5)


@pytest.mark.parametrize("constant_weights", [True, False], ids=["constant", "inputs"])
@pytest.mark.parametrize("seed", range(20))
def test_rnn_step(monkeypatch, seed, constant_weights):
    rng = np.random.default_rng(1000 + seed)
    inputs, units, batch = (int(v) for v in rng.integers(1, 12, 3))

    def r(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    values = [r(batch, inputs), r(units, inputs), r(units, units), r(units), r(batch, units),
              i32(int(rng.integers(0, 4)))]
    ins, outs = operands(values, 2, constant_weights=constant_weights)
    if constant_weights:
        ins[4] = operands([values[4]], 0)[0][0]
    expected, actual = run_both(monkeypatch, OperationType.RNN, ins, outs)
    assert_close(expected, actual, rtol=2e-5)


def test_float16_lstm_stays_with_the_reference(monkeypatch):
    rng = np.random.default_rng(7)
    p = {k: v.astype(np.float16) for k, v in lstm_params(rng, 3, 2).items()}
    state = np.zeros((1, 2), np.float16)
    values = [rng.uniform(-1, 1, (1, 3)).astype(np.float16), *lstm_weight_inputs(p), state,
              state, i32(4), f16(0.0), f16(0.0)]
    inputs, outputs = operands(values, 4)
    run_both(monkeypatch, OperationType.LSTM, inputs, outputs, handled=False)


@pytest.mark.parametrize("activation", [4, 6], ids=["tanh", "sigmoid"])
def test_gate_functions_are_within_two_ulp(monkeypatch, activation):
    """The kernel's own sigmoid and tanh (sixteen lanes at a time), read through an LSTM step
    whose cell state is activation(cell bias): within 2 float32 ulp of the exact function on
    normal results, saturating at the infinities, NaN kept."""
    values = np.concatenate([np.linspace(-120, 120, 2001), np.linspace(-0.6, 0.6, 1001),
                             [0.0, 1e-30, -1e-30, 88.72, 88.73, -103.9, -104.5, np.inf,
                              -np.inf, np.nan]]).astype(np.float32)
    n = values.size
    zero_w, zero_r = np.zeros((n, 1), np.float32), np.zeros((n, n), np.float32)
    biases = [np.full(n, 1e4, np.float32), np.full(n, -1e4, np.float32), values,
              np.zeros(n, np.float32)]  # input gate 1, forget gate 0
    weights = [zero_w] * 4 + [zero_r] * 4 + [None] * 3 + biases + [None, None]
    inputs, outputs = operands([np.zeros((1, 1), np.float32), *weights,
                                np.zeros((1, n), np.float32), np.zeros((1, n), np.float32),
                                i32(activation), f32(0.0), f32(0.0)], 4, constant_weights=True)
    _, actual = run_both(monkeypatch, OperationType.LSTM, inputs, outputs)
    got = actual[2][0].astype(np.float64)
    with np.errstate(all="ignore"):
        exact = np.tanh(values.astype(np.float64)) if activation == 4 \
            else 1 / (1 + np.exp(-values.astype(np.float64)))
    normal = np.isfinite(values) & (np.abs(exact) >= np.finfo(np.float32).tiny)
    ulp = np.spacing(np.abs(exact[normal]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - exact[normal]) / ulp) <= 2
    np.testing.assert_array_equal(got[-3:-1], [1, -1] if activation == 4 else [1, 0])
    assert np.isnan(got[-1])
