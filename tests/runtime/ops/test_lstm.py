"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM against a float64
reference of NeuralNetworks.h's equations, layouts and directions, and their errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, FeatureLevel, OperationType
from torch_nnapi.nnapi.errors import NnapiError
from torch_nnapi.runtime import Compilation

from ._recurrent_support import lstm_params, lstm_weight_inputs, operands, reference_lstm
from ._single_op import HALF, boolean, build, const, f32, fed_values, i32, run

Op = OperationType
TANH = 4
CONFIGS: dict[str, dict[str, Any]] = {  # keyword arguments of lstm_params
    "basic": dict(),
    "cifg": dict(cifg=True),
    "peephole": dict(peephole=True),
    "projection": dict(output_size=3, projection_bias=True),
    "layer_norm": dict(layer_norm=True, peephole=True),
    "cifg_peephole_norm_projection": dict(cifg=True, peephole=True, layer_norm=True,
                                          output_size=6),
}


def _layer_norm_inputs(p):
    return [p.get("l" + g) for g in "ifco"]


def _lstm_inputs(p, x, h, c, act=TANH, cell_clip=0.0, proj_clip=0.0, layer_norm_form=None):
    inputs = [x, *lstm_weight_inputs(p), h, c, i32(act), f32(cell_clip), f32(proj_clip)]
    if layer_norm_form or any(k.startswith("l") for k in p):
        inputs += _layer_norm_inputs(p)
    return inputs


def _states(rng, batch, p, cells):
    output_size = p["proj"].shape[0] if "proj" in p else cells
    return (rng.uniform(-1, 1, (batch, output_size)).astype(np.float32),
            rng.uniform(-1, 1, (batch, cells)).astype(np.float32))


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("omit_as_input", [False, True])
def test_lstm_step_matches_reference(name, omit_as_input):
    rng = np.random.default_rng(1)
    kwargs = dict(CONFIGS[name])
    output_size = kwargs.pop("output_size", None)
    p = lstm_params(rng, 5, 4, output_size, **kwargs)
    x = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    clip = 0.3 if output_size else 0.0
    scratch, h_out, c_out, out = run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c, cell_clip=0.8,
                                                                    proj_clip=clip),
                                                       4, omit_as_input=omit_as_input))
    want_out, want_h, want_c = reference_lstm(p, x[None], h, c, cell_clip=0.8, proj_clip=clip)
    np.testing.assert_allclose(out, want_out[0], atol=1e-5)
    np.testing.assert_allclose(h_out, want_h, atol=1e-5)
    np.testing.assert_allclose(c_out, want_c, atol=1e-5)
    gates = 3 if kwargs.get("cifg") else 4
    assert scratch.shape == (2, gates * 4)
    # Android's scratch buffer layout: gate blocks of [batch, cells]; the last is the gated
    # output before projection, the one before it the forget gate (1 - f with CIFG).
    blocks = scratch.reshape(gates, 2, 4)
    if not output_size:
        np.testing.assert_allclose(blocks[-1], out, atol=1e-6)


def test_lstm_27_input_form_without_layer_norm_equals_23_input_form():
    rng = np.random.default_rng(2)
    p = lstm_params(rng, 3, 4, peephole=True)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    short = run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c), 4))
    long = run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c, layer_norm_form=True), 4))
    for a, b in zip(short, long, strict=True):
        np.testing.assert_array_equal(a, b)


def test_lstm_feature_levels_of_its_forms():
    rng = np.random.default_rng(3)
    p = lstm_params(rng, 3, 4)
    x = np.zeros((1, 3), np.float32)
    h, c = _states(rng, 1, p, 4)
    assert build(Op.LSTM, *operands(_lstm_inputs(p, x, h, c), 4)).feature_level == \
        FeatureLevel.ANDROID_8_1
    assert build(Op.LSTM, *operands(_lstm_inputs(p, x, h, c, layer_norm_form=True), 4))\
        .feature_level == FeatureLevel.ANDROID_10


def test_lstm_float16_computes_in_float32():
    rng = np.random.default_rng(4)
    p = lstm_params(rng, 3, 4, cifg=True, peephole=True)
    p16 = {k: v.astype(np.float16) for k, v in p.items()}
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float16)
    h, c = (s.astype(np.float16) for s in _states(rng, 2, p, 4))
    inputs = [x, *lstm_weight_inputs(p16), h, c, i32(TANH), const(HALF, 0.0), const(HALF, 0.0)]
    _, _, c_out, out = run(Op.LSTM, *operands(inputs, 4))
    assert out.dtype == np.float16
    want, _, want_c = reference_lstm(p16, x[None], h, c)
    np.testing.assert_allclose(out.astype(np.float32), want[0], atol=2e-3)
    np.testing.assert_allclose(c_out.astype(np.float32), want_c, atol=2e-3)


def test_lstm_with_constant_weights_settles_shapes_at_compilation():
    rng = np.random.default_rng(13)
    p = lstm_params(rng, 3, 4, output_size=2, cifg=True)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    inputs, outputs = operands(_lstm_inputs(p, x, h, c), 4, constant_weights=True)
    model = build(Op.LSTM, inputs, outputs)
    compilation = Compilation(model)
    assert [compilation.shapes[o] for o in model.outputs] == [(2, 12), (2, 2), (2, 4), (2, 2)]
    out = compilation.run(fed_values(inputs)).outputs[3]
    np.testing.assert_allclose(out, reference_lstm(p, x[None], h, c)[0][0], atol=1e-5)


def test_layer_norm_of_a_constant_gate_is_finite():
    """A gate whose pre-activations are all equal has zero variance: epsilon, not NaN."""
    rng = np.random.default_rng(14)
    p = lstm_params(rng, 3, 4, layer_norm=True)
    for key in list(p):
        if key[0] in "wr":
            p[key][:] = 0
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    _, h_out, c_out, _ = run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c), 4))
    assert np.isfinite(h_out).all() and np.isfinite(c_out).all()
    # Normalized gates are 0, so each gate is sigmoid/tanh of its bias alone.
    f, g = 1 / (1 + np.exp(-p["bf"])), np.tanh(p["bc"])
    i = 1 / (1 + np.exp(-p["bi"]))
    np.testing.assert_allclose(c_out, f * c + i * g, atol=1e-6)


# --------------------------------------------------------------------------------------------
# Sequences


def _sequence_inputs(p, x, h, c, time_major):
    return [x, *lstm_weight_inputs(p), h, c, i32(TANH), f32(0.0), f32(0.0), boolean(time_major),
            *_layer_norm_inputs(p)]


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("name", ["basic", "cifg_peephole_norm_projection"])
def test_unidirectional_sequence_lstm_matches_reference(time_major, name):
    rng = np.random.default_rng(5)
    kwargs = dict(CONFIGS[name])
    output_size = kwargs.pop("output_size", None)
    p = lstm_params(rng, 3, 4, output_size, **kwargs)
    xs = rng.uniform(-1, 1, (5, 2, 3)).astype(np.float32)  # time-major
    h, c = _states(rng, 2, p, 4)
    x = xs if time_major else xs.swapaxes(0, 1).copy()
    (out,) = run(Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
                 *operands(_sequence_inputs(p, x, h, c, time_major), 1))
    want, _, _ = reference_lstm(p, xs, h, c)
    np.testing.assert_allclose(out, want if time_major else want.swapaxes(0, 1), atol=1e-5)


def test_sequence_lstm_equals_repeated_lstm_steps():
    rng = np.random.default_rng(6)
    p = lstm_params(rng, 3, 4, peephole=True)
    xs = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    (sequence,) = run(Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
                      *operands(_sequence_inputs(p, xs, h, c, True), 1))
    for t in range(4):
        _, h, c, out = run(Op.LSTM, *operands(_lstm_inputs(p, xs[t], h, c), 4))
        np.testing.assert_allclose(sequence[t], out, atol=1e-6)


def _bidirectional_inputs(fw, bw, x, states, merge, time_major, aux=None):
    return ([x, *lstm_weight_inputs(fw), *lstm_weight_inputs(bw), *states, aux]
            + [fw.get("a" + g) for g in "ifco"] + [bw.get("a" + g) for g in "ifco"]
            + [i32(TANH), f32(0.0), f32(0.0), boolean(merge), boolean(time_major)]
            + _layer_norm_inputs(fw) + _layer_norm_inputs(bw))


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("time_major", [True, False])
def test_bidirectional_sequence_lstm_runs_both_directions(merge, time_major):
    rng = np.random.default_rng(7)
    fw = lstm_params(rng, 3, 4, aux_size=2, peephole=True)
    bw = lstm_params(rng, 3, 5, output_size=2, aux_size=2, cifg=True, layer_norm=True)
    xs = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    aux = rng.uniform(-1, 1, (4, 2, 2)).astype(np.float32)
    states = [*_states(rng, 2, fw, 4), *_states(rng, 2, bw, 5)]

    def layout(a):
        return a if time_major else a.swapaxes(0, 1).copy()

    outputs = run(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
                  *operands(_bidirectional_inputs(fw, bw, layout(xs), states, merge, time_major,
                                                  layout(aux)), 1 if merge else 2))
    want_fw, _, _ = reference_lstm(fw, xs, states[0], states[1], aux=aux)
    want_bw, _, _ = reference_lstm(bw, xs[::-1], states[2], states[3], aux=aux[::-1])
    want = [layout(want_fw), layout(want_bw[::-1])]
    if merge:
        want = [np.concatenate(want, axis=-1)]
    assert len(outputs) == len(want)
    for got, expected in zip(outputs, want, strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_sequence_lstm_with_unknown_batch_and_time():
    rng = np.random.default_rng(8)
    p = lstm_params(rng, 3, 4)
    h, c = _states(rng, 2, p, 4)
    xs = rng.uniform(-1, 1, (6, 2, 3)).astype(np.float32)
    inputs, outputs = operands(_sequence_inputs(p, xs, h, c, True), 1, output_dims=(0, 0, 0))
    (out,) = run(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs)
    assert out.shape == (6, 2, 4)


# --------------------------------------------------------------------------------------------
# Errors


def _basic(rng=None):
    rng = rng or np.random.default_rng(9)
    p = lstm_params(rng, 3, 4, peephole=True)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h, c = _states(rng, 2, p, 4)
    return p, x, h, c


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p.pop("ri"), r"CIFG: input 1 \(input_to_input_weights\), input 5"
                            r" \(recurrent_to_input_weights\), input 12 \(input_gate_bias\)"
                            " must all"),
    (lambda p: p.pop("pf"), r"peephole: input 9 .* must all have values or all be omitted"),
    (lambda p: p.update(wf=np.zeros((4, 2), np.float32)),
     r"input 2 \(input_to_forget_weights\) must have shape \[4, 3\], got \[4, 2\]"),
    (lambda p: p.update(pb=np.zeros(4, np.float32)),
     r"input 17 \(projection_bias\) needs projection weights"),
    (lambda p: p.update({"r" + g: np.zeros((4, 3), np.float32) for g in "ifco"}),
     r"without projection weights the output size \(3"),
])
def test_lstm_rejects_inconsistent_operands(mutate, message):
    p, x, h, c = _basic()
    mutate(p)
    with pytest.raises(BadDataError, match=message):
        run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c), 4))


@pytest.mark.parametrize("kwargs, message", [
    (dict(act=2), r"input 20 \(activation\) is activation 2; expected one of 0 \(none\)"),
    (dict(cell_clip=-1.0), r"input 21 \(cell_clip\) must be >= 0"),
])
def test_lstm_rejects_bad_parameters(kwargs, message):
    p, x, h, c = _basic()
    with pytest.raises(BadDataError, match=message):
        run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c, **kwargs), 4))


def test_lstm_rejects_wrong_state_shape():
    p, x, h, c = _basic()
    with pytest.raises(BadDataError, match=r"input 19 \(cell_state_in\) must have shape"
                                           r" \[2, 4\], got \[2, 3\]"):
        run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c[:, :3]), 4))


def test_lstm_cifg_forbids_input_layer_norm_weights():
    rng = np.random.default_rng(10)
    p = lstm_params(rng, 3, 4, cifg=True, layer_norm=True)
    p["li"] = np.ones(4, np.float32)
    x = np.zeros((1, 3), np.float32)
    h, c = _states(rng, 1, p, 4)
    with pytest.raises(BadDataError, match=r"input 23 \(input_layer_norm_weights\) must be"
                                           " omitted when CIFG is used"):
        run(Op.LSTM, *operands(_lstm_inputs(p, x, h, c), 4))


def test_required_operand_omitted_at_execution_is_named():
    p, x, h, c = _basic()
    inputs = _lstm_inputs(p, x, h, c)
    inputs[13] = None  # forget_gate_bias
    with pytest.raises(NnapiError, match=r"input 13 \(forget_gate_bias\) has no value but is"
                                         r" required \(model input 13 is omitted\)"):
        run(Op.LSTM, *operands(inputs, 4, omit_as_input=True))


def test_bidirectional_lstm_output_count_must_follow_merge_outputs():
    rng = np.random.default_rng(11)
    fw, bw = lstm_params(rng, 3, 4), lstm_params(rng, 3, 4)
    xs = np.zeros((2, 1, 3), np.float32)
    states = [*_states(rng, 1, fw, 4), *_states(rng, 1, bw, 4)]
    with pytest.raises(BadDataError, match=r"input 51 \(merge_outputs\) is True, so the"
                                           r" operation needs only fw_output .* the separate"
                                           " form's"):
        run(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
            *operands(_bidirectional_inputs(fw, bw, xs, states, True, True), 2))


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_lstm_parallel_linking_and_state_outputs(merge):
    """An auxiliary input without auxiliary weights is the backward cell's input (API 30),
    and the last states come out after the sequences when asked for."""
    rng = np.random.default_rng(12)
    fw, bw = lstm_params(rng, 3, 4), lstm_params(rng, 2, 5)
    xs = rng.uniform(-1, 1, (3, 2, 3)).astype(np.float32)
    aux = rng.uniform(-1, 1, (3, 2, 2)).astype(np.float32)
    states = [*_states(rng, 2, fw, 4), *_states(rng, 2, bw, 5)]
    outputs = run(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
                  *operands(_bidirectional_inputs(fw, bw, xs, states, merge, True, aux=aux),
                            5 if merge else 6))
    want_fw, fw_h, fw_c = reference_lstm(fw, xs, *states[:2])
    want_bw, bw_h, bw_c = reference_lstm(bw, aux[::-1], *states[2:])
    sequences = [want_fw, want_bw[::-1]]
    if merge:
        sequences = [np.concatenate(sequences, axis=-1)]
    assert len(outputs) == len(sequences) + 4
    for got, expected in zip(outputs, [*sequences, fw_h, fw_c, bw_h, bw_c], strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_bidirectional_lstm_aux_weights_need_aux_input():
    rng = np.random.default_rng(15)
    fw, bw = lstm_params(rng, 3, 4, aux_size=2), lstm_params(rng, 3, 4, aux_size=2)
    xs = np.zeros((2, 1, 3), np.float32)
    states = [*_states(rng, 1, fw, 4), *_states(rng, 1, bw, 4)]
    with pytest.raises(BadDataError, match=r"auxiliary weights need input 39 \(aux_input\)"):
        run(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
            *operands(_bidirectional_inputs(fw, bw, xs, states, False, True), 2))


def test_bidirectional_lstm_cifg_forbids_aux_input_to_input_weights():
    rng = np.random.default_rng(16)
    fw = lstm_params(rng, 3, 4, aux_size=2, cifg=True)
    bw = lstm_params(rng, 3, 4, aux_size=2)
    fw["ai"] = np.zeros((4, 2), np.float32)
    xs = np.zeros((2, 1, 3), np.float32)
    aux = np.zeros((2, 1, 2), np.float32)
    states = [*_states(rng, 1, fw, 4), *_states(rng, 1, bw, 4)]
    with pytest.raises(BadDataError, match=r"input 40 \(fw_aux_input_to_input_weights\) must"
                                           " be omitted when CIFG is used"):
        run(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
            *operands(_bidirectional_inputs(fw, bw, xs, states, False, True, aux=aux), 2))
