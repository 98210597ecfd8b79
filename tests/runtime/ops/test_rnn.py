"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF against NumPy
references, both layouts, both directions, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import BadDataError, OperationType

from ._recurrent_support import operands, reference_rnn
from ._single_op import boolean, i32, run

Op = OperationType
RELU, RELU1 = 1, 2


def _rnn_weights(rng, input_size, units, aux_size=None):
    def r(*shape):
        return rng.uniform(-0.5, 0.5, shape).astype(np.float32)

    weights = [r(units, input_size), r(units, units), r(units)]
    return weights + [r(units, aux_size)] if aux_size else weights


def test_rnn_step_matches_reference_and_both_outputs_are_the_state():
    rng = np.random.default_rng(1)
    w, r, b = _rnn_weights(rng, 3, 4)
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    h = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    state, out = run(Op.RNN, *operands([x, w, r, b, h, i32(RELU1)], 2))
    _, want = reference_rnn(x[None], h, w, r, b, lambda v: np.clip(v, -1, 1))
    np.testing.assert_allclose(out, want, atol=1e-6)
    np.testing.assert_array_equal(state, out)


def test_rnn_float16():
    rng = np.random.default_rng(2)
    w, r, b = (a.astype(np.float16) for a in _rnn_weights(rng, 3, 4))
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float16)
    h = rng.uniform(-1, 1, (2, 4)).astype(np.float16)
    _, out = run(Op.RNN, *operands([x, w, r, b, h, i32(RELU)], 2))
    assert out.dtype == np.float16
    _, want = reference_rnn(x[None], h, w, r, b)
    np.testing.assert_allclose(out.astype(np.float32), want, atol=2e-3)


@pytest.mark.parametrize("time_major", [0, 1])
def test_unidirectional_sequence_rnn_layouts(time_major):
    rng = np.random.default_rng(3)
    w, r, b = _rnn_weights(rng, 3, 4)
    xs = rng.uniform(-1, 1, (5, 2, 3)).astype(np.float32)
    h = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    x = xs if time_major else xs.swapaxes(0, 1).copy()
    (out,) = run(Op.UNIDIRECTIONAL_SEQUENCE_RNN,
                 *operands([x, w, r, b, h, i32(RELU), i32(time_major)], 1))
    want, _ = reference_rnn(xs, h, w, r, b)
    np.testing.assert_allclose(out, want if time_major else want.swapaxes(0, 1), atol=1e-6)


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("with_aux", [False, True])
def test_bidirectional_sequence_rnn(merge, time_major, with_aux):
    rng = np.random.default_rng(4)
    fw = _rnn_weights(rng, 3, 4, aux_size=2)
    bw = _rnn_weights(rng, 3, 5, aux_size=2)
    xs = rng.uniform(-1, 1, (6, 2, 3)).astype(np.float32)
    aux = rng.uniform(-1, 1, (6, 2, 2)).astype(np.float32)
    h_fw = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    h_bw = rng.uniform(-1, 1, (2, 5)).astype(np.float32)

    def layout(a):
        return a if time_major else a.swapaxes(0, 1).copy()

    aux_inputs = [layout(aux), fw[3], bw[3]] if with_aux else [None, None, None]
    outputs = run(Op.BIDIRECTIONAL_SEQUENCE_RNN,
                  *operands([layout(xs), *fw[:3], h_fw, *bw[:3], h_bw, *aux_inputs, i32(RELU),
                             boolean(time_major), boolean(merge)], 1 if merge else 2))
    def aux_kw(weights, a):
        return dict(aux=a, aux_w=weights[3]) if with_aux else {}

    want_fw, _ = reference_rnn(xs, h_fw, *fw[:3], **aux_kw(fw, aux))
    want_bw, _ = reference_rnn(xs[::-1], h_bw, *bw[:3], **aux_kw(bw, aux[::-1]))
    want = [layout(want_fw), layout(want_bw[::-1])]
    if merge:
        want = [np.concatenate(want, axis=-1)]
    for got, expected in zip(outputs, want, strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_rnn_rejects_mismatched_recurrent_weights():
    rng = np.random.default_rng(5)
    w, r, b = _rnn_weights(rng, 3, 4)
    with pytest.raises(BadDataError, match=r"input 2 \(recurrent_weights\) must have shape"
                                           r" \[4, 4\], got \[4, 3\]"):
        run(Op.RNN, *operands([np.zeros((2, 3), np.float32), w, r[:, :3], b,
                               np.zeros((2, 4), np.float32), i32(RELU)], 2))


def test_rnn_rejects_lstm_only_activation():
    rng = np.random.default_rng(6)
    w, r, b = _rnn_weights(rng, 3, 4)
    with pytest.raises(BadDataError, match=r"input 5 \(fuse_code\) is activation 4"):
        run(Op.RNN, *operands([np.zeros((2, 3), np.float32), w, r, b,
                               np.zeros((2, 4), np.float32), i32(4)], 2))


def test_unidirectional_rnn_rejects_time_major_other_than_0_or_1():
    rng = np.random.default_rng(7)
    w, r, b = _rnn_weights(rng, 3, 4)
    with pytest.raises(BadDataError, match=r"input 6 \(time_major\) must be 0 or 1, got 2"):
        run(Op.UNIDIRECTIONAL_SEQUENCE_RNN,
            *operands([np.zeros((2, 2, 3), np.float32), w, r, b, np.zeros((2, 4), np.float32),
                       i32(1), i32(2)], 1))


def test_bidirectional_rnn_aux_weights_all_or_none():
    rng = np.random.default_rng(8)
    fw, bw = _rnn_weights(rng, 3, 4, 3), _rnn_weights(rng, 3, 4, 3)
    xs = np.zeros((2, 1, 3), np.float32)
    h = np.zeros((1, 4), np.float32)
    with pytest.raises(BadDataError, match=r"auxiliary weights: input 10 \(fw_aux_weights\),"
                                           r" input 11 \(bw_aux_weights\) must all have values"
                                           " or all be omitted"):
        run(Op.BIDIRECTIONAL_SEQUENCE_RNN,
            *operands([xs, *fw[:3], h, *bw[:3], h, xs, fw[3], None, i32(RELU), boolean(True),
                       boolean(False)], 2))


def test_bidirectional_rnn_parallel_linking_and_state_outputs():
    """An auxiliary input without auxiliary weights is the backward cell's input (API 30);
    the last hidden states follow the sequences when asked for."""
    rng = np.random.default_rng(9)
    fw, bw = _rnn_weights(rng, 3, 4), _rnn_weights(rng, 2, 5)
    xs = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    aux = rng.uniform(-1, 1, (4, 2, 2)).astype(np.float32)
    h_fw = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    h_bw = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    outputs = run(Op.BIDIRECTIONAL_SEQUENCE_RNN,
                  *operands([xs, *fw, h_fw, *bw, h_bw, aux, None, None, i32(RELU),
                             boolean(True), boolean(False)], 4))
    want_fw, last_fw = reference_rnn(xs, h_fw, *fw)
    want_bw, last_bw = reference_rnn(aux[::-1], h_bw, *bw)
    for got, expected in zip(outputs, [want_fw, want_bw[::-1], last_fw, last_bw], strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


# --------------------------------------------------------------------------------------------
# SVDF


def _svdf_reference(xs, weights_feature, weights_time, bias, rank):
    """out_t[u] = bias[u] + sum over the unit's rank filters f and the memory k of
    weights_time[f, M-1-k] * (x_{t-k} . weights_feature[f]), with zero initial memory."""
    memory_size = weights_time.shape[1]
    features = xs.astype(np.float64) @ weights_feature.T  # [time, batch, filters]
    outputs = []
    for t in range(len(xs)):
        filtered = sum(weights_time[:, memory_size - 1 - k] * features[t - k]
                       for k in range(min(memory_size, t + 1)))
        batch, filters = filtered.shape
        outputs.append(filtered.reshape(batch, filters // rank, rank).sum(-1) + bias)
    return outputs


@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("with_bias", [False, True])
def test_svdf_over_several_steps_feeding_back_the_state(rank, with_bias):
    rng = np.random.default_rng(9)
    batch, input_size, units, memory_size = 2, 3, 4, 3
    filters = units * rank
    weights_feature = rng.uniform(-0.5, 0.5, (filters, input_size)).astype(np.float32)
    weights_time = rng.uniform(-0.5, 0.5, (filters, memory_size)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, units).astype(np.float32)
    xs = rng.uniform(-1, 1, (5, batch, input_size)).astype(np.float32)
    want = _svdf_reference(xs, weights_feature, weights_time, bias if with_bias else 0, rank)
    state = np.zeros((batch, memory_size * filters), np.float32)
    for t, x in enumerate(xs):
        state, out = run(Op.SVDF, *operands([x, weights_feature, weights_time,
                                             bias if with_bias else None, state, i32(rank),
                                             i32(0)], 2))
        np.testing.assert_allclose(out, want[t], atol=1e-5)


@pytest.mark.parametrize("rank, message", [
    (3, r"input 5 \(rank\) is 3; it must be positive and divide the number of filters \(4"),
    (0, r"input 5 \(rank\) is 0"),
])
def test_svdf_rank_must_divide_filters(rank, message):
    with pytest.raises(BadDataError, match=message):
        run(Op.SVDF, *operands([np.zeros((1, 3), np.float32), np.zeros((4, 3), np.float32),
                                np.zeros((4, 2), np.float32), None, np.zeros((1, 8), np.float32),
                                i32(rank), i32(0)], 2))


def test_svdf_checks_the_state_size():
    with pytest.raises(BadDataError, match=r"input 4 \(state_in\) must have shape \[1, 8\],"
                                           r" got \[1, 6\]"):
        run(Op.SVDF, *operands([np.zeros((1, 3), np.float32), np.zeros((4, 3), np.float32),
                                np.zeros((4, 2), np.float32), None, np.zeros((1, 6), np.float32),
                                i32(1), i32(0)], 2))


def test_infinities_and_nans_propagate_without_warnings():
    rng = np.random.default_rng(10)
    w, r, b = _rnn_weights(rng, 3, 4)
    x = np.array([[np.inf, -np.inf, 1.0], [np.nan, 0.0, 1.0]], np.float32)
    with np.errstate(all="raise"):
        _, out = run(Op.RNN, *operands([x, w, r, b, np.zeros((2, 4), np.float32), i32(0)], 2))
    assert not np.isfinite(out[0]).any() and np.isnan(out[1]).all()
