"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF.

The three RNN operations run the one ``RnnCell`` of ``_recurrent``; SVDF is the other stateful
float layer of NNAPI 1.0. Float16 is computed in float32 and cast back.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..registry import register
from ._recurrent import (
    FUSE_CODES,
    RnnCell,
    activation,
    expect_shape,
    ieee_float,
    required_shape,
    rnn_units,
    sequence_dims,
    time_major_view,
)


def _cell(ctx: KernelContext, weights: int, recurrent: int, bias: int, fuse_code: int,
          aux_weights: int | None = None) -> RnnCell:
    cell = RnnCell(ctx.float_input(weights), ctx.float_input(recurrent), ctx.float_input(bias),
                   activation(ctx, fuse_code, FUSE_CODES))
    if aux_weights is not None:
        cell.aux_weights = ctx.float_input(aux_weights)
    return cell


# --------------------------------------------------------------------------------------------
# RNN: one time step; both outputs are the new state


def _prepare_rnn(ctx: KernelContext) -> list[Shape]:
    batch, input_size = required_shape(ctx, 0, 2)
    units = rnn_units(ctx, 1, 2, 3, 4, batch, input_size)
    activation(ctx, 5, FUSE_CODES)
    return [(batch, units), (batch, units)]


@register(Op.RNN, prepare=_prepare_rnn)
@ieee_float
def rnn(ctx: KernelContext) -> list[np.ndarray]:
    cell = _cell(ctx, 1, 2, 3, 5)
    state = cell.step(cell.input_contribution(ctx.float_input(0)), ctx.float_input(4))
    state = state.astype(ctx.output_dtype())
    return [state, state.copy()]


# --------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_RNN (time_major is an INT32 here, 0 or 1)


def _unidirectional_time_major(ctx: KernelContext) -> bool:
    time_major = ctx.scalar(6)
    if time_major not in (0, 1):
        raise BadDataError(f"input 6 (time_major) must be 0 or 1, got {time_major}")
    return bool(time_major)


def _prepare_unidirectional(ctx: KernelContext) -> list[Shape]:
    steps, batch, input_size = sequence_dims(ctx, 0, _unidirectional_time_major(ctx))
    units = rnn_units(ctx, 1, 2, 3, 4, batch, input_size)
    activation(ctx, 5, FUSE_CODES)
    return [ctx.input_shape(0)[:2] + (units,)]


@register(Op.UNIDIRECTIONAL_SEQUENCE_RNN, prepare=_prepare_unidirectional)
@ieee_float
def unidirectional_sequence_rnn(ctx: KernelContext) -> np.ndarray:
    time_major = _unidirectional_time_major(ctx)
    outputs, _ = _cell(ctx, 1, 2, 3, 5).run(time_major_view(ctx.float_input(0), time_major),
                                            ctx.float_input(4))
    return np.ascontiguousarray(time_major_view(outputs, time_major), ctx.output_dtype())


# --------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_RNN

_FW_WEIGHTS, _FW_RECURRENT, _FW_BIAS, _FW_STATE = 1, 2, 3, 4
_BW_WEIGHTS, _BW_RECURRENT, _BW_BIAS, _BW_STATE = 5, 6, 7, 8
_AUX_INPUT, _FW_AUX_WEIGHTS, _BW_AUX_WEIGHTS = 9, 10, 11
_FUSE_CODE, _TIME_MAJOR, _MERGE_OUTPUTS = 12, 13, 14


def _bidirectional_params(ctx: KernelContext) -> tuple[bool, bool, bool, int, int]:
    """(time_major, merge_outputs, has_aux, fw_units, bw_units), after checking shapes."""
    time_major, merge = bool(ctx.scalar(_TIME_MAJOR)), bool(ctx.scalar(_MERGE_OUTPUTS))
    if ctx.num_outputs != (1 if merge else 2):
        raise BadDataError(f"merge_outputs is {merge}, so the operation must have"
                           f" {1 if merge else 2} outputs, not {ctx.num_outputs}")
    steps, batch, input_size = sequence_dims(ctx, 0, time_major)
    fw_units = rnn_units(ctx, _FW_WEIGHTS, _FW_RECURRENT, _FW_BIAS, _FW_STATE, batch,
                         input_size)
    bw_units = rnn_units(ctx, _BW_WEIGHTS, _BW_RECURRENT, _BW_BIAS, _BW_STATE, batch,
                         input_size)
    aux = [ctx.has_input(i) for i in (_AUX_INPUT, _FW_AUX_WEIGHTS, _BW_AUX_WEIGHTS)]
    if any(aux) and not all(aux):
        raise BadDataError("inputs 9 (aux_input), 10 (fw_aux_weights) and 11 (bw_aux_weights)"
                           " must all have values or all be omitted")
    if all(aux):
        aux_steps, aux_batch, aux_size = sequence_dims(ctx, _AUX_INPUT, time_major)
        if (aux_steps, aux_batch) != (steps, batch):
            raise BadDataError(f"input 9 (aux_input) has shape {list(ctx.input_shape(9))};"
                               " its time and batch dimensions must match the input's"
                               f" {list(ctx.input_shape(0))}")
        expect_shape(ctx, _FW_AUX_WEIGHTS, (fw_units, aux_size))
        expect_shape(ctx, _BW_AUX_WEIGHTS, (bw_units, aux_size))
    activation(ctx, _FUSE_CODE, FUSE_CODES)
    return time_major, merge, all(aux), fw_units, bw_units


def _prepare_bidirectional(ctx: KernelContext) -> list[Shape]:
    _, merge, _, fw_units, bw_units = _bidirectional_params(ctx)
    leading = ctx.input_shape(0)[:2]
    if merge:
        return [leading + (fw_units + bw_units,)]
    return [leading + (fw_units,), leading + (bw_units,)]


@register(Op.BIDIRECTIONAL_SEQUENCE_RNN, prepare=_prepare_bidirectional)
@ieee_float
def bidirectional_sequence_rnn(ctx: KernelContext) -> list[np.ndarray]:
    time_major, merge, has_aux, _, _ = _bidirectional_params(ctx)
    x = time_major_view(ctx.float_input(0), time_major)
    aux = time_major_view(ctx.float_input(_AUX_INPUT), time_major) if has_aux else None
    results = []
    for weights, recurrent, bias, state, aux_weights, reverse in (
            (_FW_WEIGHTS, _FW_RECURRENT, _FW_BIAS, _FW_STATE, _FW_AUX_WEIGHTS, False),
            (_BW_WEIGHTS, _BW_RECURRENT, _BW_BIAS, _BW_STATE, _BW_AUX_WEIGHTS, True)):
        cell = _cell(ctx, weights, recurrent, bias, _FUSE_CODE, aux_weights if has_aux else None)
        outputs, _ = cell.run(x, ctx.float_input(state), aux, reverse)
        results.append(outputs)
    if merge:
        results = [np.concatenate(results, axis=-1)]
    dtype = ctx.output_dtype()
    return [np.ascontiguousarray(time_major_view(r, time_major), dtype) for r in results]


# --------------------------------------------------------------------------------------------
# SVDF
#
# The state holds, per batch and filter, the last memory_size feature-filter outputs (oldest
# first), i.e. [batch, num_filters * memory_size] with num_filters = num_units * rank, as
# Android lays it out. Each step writes the new feature output into the last slot, filters the
# memory over time, sums the rank filters of each unit, and shifts the memory left.


def _svdf_dims(ctx: KernelContext) -> tuple[int, int, int, int]:
    """(batch, num_units, rank, memory_size), after checking shapes and parameters."""
    batch, input_size = required_shape(ctx, 0, 2)
    rank = ctx.scalar(5)
    num_filters = required_shape(ctx, 1, 2)[0]
    if rank <= 0 or num_filters % rank:
        raise BadDataError(f"input 5 (rank) is {rank}; it must be positive and divide the"
                           f" number of filters ({num_filters}, from input 1)")
    expect_shape(ctx, 1, (num_filters, input_size))
    memory_size = required_shape(ctx, 2, 2)[1]
    expect_shape(ctx, 2, (num_filters, memory_size))
    num_units = num_filters // rank
    if ctx.has_input(3):
        expect_shape(ctx, 3, (num_units,))
    expect_shape(ctx, 4, (batch, num_filters * memory_size))
    activation(ctx, 6, FUSE_CODES)
    return batch, num_units, rank, memory_size


def _prepare_svdf(ctx: KernelContext) -> list[Shape]:
    batch, num_units, rank, memory_size = _svdf_dims(ctx)
    return [(batch, num_units * rank * memory_size), (batch, num_units)]


@register(Op.SVDF, prepare=_prepare_svdf)
@ieee_float
def svdf(ctx: KernelContext) -> list[np.ndarray]:
    batch, num_units, rank, memory_size = _svdf_dims(ctx)
    weights_feature, weights_time = ctx.float_input(1), ctx.float_input(2)
    memory = ctx.float_input(4).reshape(batch, num_units * rank, memory_size).copy()
    memory[:, :, -1] = ctx.float_input(0) @ weights_feature.T
    filtered = np.einsum("bfm,fm->bf", memory, weights_time)
    output = filtered.reshape(batch, num_units, rank).sum(axis=-1, dtype=np.float32)
    if ctx.has_input(3):
        output += ctx.float_input(3)
    output = activation(ctx, 6, FUSE_CODES)(output)
    memory = np.concatenate([memory[:, :, 1:], np.zeros_like(memory[:, :, :1])], axis=-1)
    dtype = ctx.output_dtype()
    return [memory.reshape(batch, -1).astype(dtype), output.astype(dtype)]

