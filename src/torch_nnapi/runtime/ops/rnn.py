"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF.

The three RNN operations run the one ``RnnCell`` of ``_recurrent``; SVDF is the other stateful
float layer of NNAPI 1.0. Float16 is computed in float32 and cast back. Since API 30 the
sequence operations may also output their last hidden states, and the bidirectional one may
feed its auxiliary input to the backward cell in place of the input (parallel linking).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..registry import register
from ._recurrent import (
    CROSS_LINKING,
    FUSE_CODES,
    NO_LINKING,
    PARALLEL_LINKING,
    RnnCell,
    activation,
    check_aux_sequence,
    check_merged_outputs,
    expect_shape,
    ieee_float,
    linking_mode,
    required_shape,
    rnn_units,
    sequence_dims,
    time_major_view,
)


@dataclass(frozen=True)
class _RnnOperands:
    """The names of one RNN cell's inputs, as the operations' signatures declare them."""

    weights: str = "weights"
    recurrent: str = "recurrent_weights"
    bias: str = "bias"
    state: str = "hidden_state_in"
    aux_weights: str = ""  # none outside BIDIRECTIONAL_SEQUENCE_RNN

    def units(self, ctx: KernelContext, batch: int, input_size: int) -> int:
        return rnn_units(ctx, self.weights, self.recurrent, self.bias, self.state, batch,
                         input_size)

    def cell(self, ctx: KernelContext, with_aux: bool = False) -> RnnCell:
        cell = RnnCell(ctx.float_input(self.weights), ctx.float_input(self.recurrent),
                       ctx.float_input(self.bias), activation(ctx, "fuse_code", FUSE_CODES))
        if with_aux:
            cell.aux_weights = ctx.float_input(self.aux_weights)
        return cell


_SINGLE = _RnnOperands()
_SEQUENCE = _RnnOperands(state="hidden_state")
_FORWARD = _RnnOperands("fw_weights", "fw_recurrent_weights", "fw_bias", "fw_hidden_state",
                        "fw_aux_weights")
_BACKWARD = _RnnOperands("bw_weights", "bw_recurrent_weights", "bw_bias", "bw_hidden_state",
                         "bw_aux_weights")


# --------------------------------------------------------------------------------------------
# RNN: one time step; both outputs are the new state


def rnn_step_cell(ctx: KernelContext) -> RnnCell:
    """The cell of an RNN step as its operands give it; the native kernel packs its weights
    from it."""
    return _SINGLE.cell(ctx)


def _prepare_rnn(ctx: KernelContext) -> list[Shape]:
    batch, input_size = required_shape(ctx, "input", 2)
    units = _SINGLE.units(ctx, batch, input_size)
    activation(ctx, "fuse_code", FUSE_CODES)
    return [(batch, units), (batch, units)]


@register(Op.RNN, prepare=_prepare_rnn)
@ieee_float
def rnn(ctx: KernelContext) -> list[np.ndarray]:
    cell = _SINGLE.cell(ctx)
    state = cell.step(cell.input_contribution(ctx.float_input("input")),
                      ctx.float_input(_SINGLE.state))
    state = state.astype(ctx.output_dtype())
    return [state, state.copy()]


# --------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_RNN (time_major is an INT32 here, 0 or 1)


def _unidirectional_time_major(ctx: KernelContext) -> bool:
    time_major = ctx.scalar("time_major")
    if time_major not in (0, 1):
        raise BadDataError(f"{ctx.describe_input('time_major')} must be 0 or 1, got"
                           f" {time_major}")
    return bool(time_major)


def _prepare_unidirectional(ctx: KernelContext) -> list[Shape]:
    _, batch, input_size = sequence_dims(ctx, "input", _unidirectional_time_major(ctx))
    units = _SEQUENCE.units(ctx, batch, input_size)
    activation(ctx, "fuse_code", FUSE_CODES)
    states = [(batch, units)] * ctx.output_count("hidden_state_out")
    return [ctx.input_shape("input")[:2] + (units,), *states]


@register(Op.UNIDIRECTIONAL_SEQUENCE_RNN, prepare=_prepare_unidirectional)
@ieee_float
def unidirectional_sequence_rnn(ctx: KernelContext) -> list[np.ndarray]:
    time_major = _unidirectional_time_major(ctx)
    outputs, state = _SEQUENCE.cell(ctx).run(
        time_major_view(ctx.float_input("input"), time_major), ctx.float_input(_SEQUENCE.state))
    dtype = ctx.output_dtype()
    states = [state.astype(dtype)] * ctx.output_count("hidden_state_out")
    return [np.ascontiguousarray(time_major_view(outputs, time_major), dtype), *states]


# --------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_RNN


def _bidirectional_params(ctx: KernelContext) -> tuple[bool, bool, str, int, int]:
    """(time_major, merge_outputs, linking mode, fw_units, bw_units), after checking
    shapes."""
    time_major = bool(ctx.scalar("time_major"))
    merge = check_merged_outputs(ctx)
    steps, batch, input_size = sequence_dims(ctx, "input", time_major)
    linking = linking_mode(ctx, _FORWARD.aux_weights, _BACKWARD.aux_weights)
    aux_size = check_aux_sequence(ctx, time_major, steps, batch) if linking != NO_LINKING else 0
    fw_units = _FORWARD.units(ctx, batch, input_size)
    # In parallel linking the auxiliary input is the backward cell's input.
    bw_units = _BACKWARD.units(ctx, batch,
                               aux_size if linking == PARALLEL_LINKING else input_size)
    if linking == CROSS_LINKING:
        expect_shape(ctx, _FORWARD.aux_weights, (fw_units, aux_size))
        expect_shape(ctx, _BACKWARD.aux_weights, (bw_units, aux_size))
    activation(ctx, "fuse_code", FUSE_CODES)
    return time_major, merge, linking, fw_units, bw_units


def _prepare_bidirectional(ctx: KernelContext) -> list[Shape]:
    _, merge, _, fw_units, bw_units = _bidirectional_params(ctx)
    leading = ctx.input_shape("input")[:2]
    batch = leading[1] if ctx.scalar("time_major") else leading[0]
    outputs = [leading + (fw_units + bw_units,)] if merge else \
        [leading + (fw_units,), leading + (bw_units,)]
    if ctx.output_count("fw_hidden_state_out"):
        outputs += [(batch, fw_units), (batch, bw_units)]
    return outputs


@register(Op.BIDIRECTIONAL_SEQUENCE_RNN, prepare=_prepare_bidirectional)
@ieee_float
def bidirectional_sequence_rnn(ctx: KernelContext) -> list[np.ndarray]:
    time_major, merge, linking, _, _ = _bidirectional_params(ctx)
    x = time_major_view(ctx.float_input("input"), time_major)
    aux = time_major_view(ctx.float_input("aux_input"), time_major) \
        if linking != NO_LINKING else None
    cross = linking == CROSS_LINKING
    results, states = [], []
    for at, reverse in ((_FORWARD, False), (_BACKWARD, True)):
        inputs = aux if linking == PARALLEL_LINKING and reverse and aux is not None else x
        outputs, state = at.cell(ctx, cross).run(inputs, ctx.float_input(at.state),
                                                 aux if cross else None, reverse)
        results.append(outputs)
        states.append(state)
    if merge:
        results = [np.concatenate(results, axis=-1)]
    dtype = ctx.output_dtype("fw_output")
    sequences = [np.ascontiguousarray(time_major_view(r, time_major), dtype) for r in results]
    if not ctx.output_count("fw_hidden_state_out"):
        return sequences
    return [*sequences, *(state.astype(dtype) for state in states)]


# --------------------------------------------------------------------------------------------
# SVDF
#
# The state holds, per batch and filter, the last memory_size feature-filter outputs (oldest
# first), i.e. [batch, num_filters * memory_size] with num_filters = num_units * rank, as
# Android lays it out. Each step writes the new feature output into the last slot, filters the
# memory over time, sums the rank filters of each unit, and shifts the memory left.


def _svdf_dims(ctx: KernelContext) -> tuple[int, int, int, int]:
    """(batch, num_units, rank, memory_size), after checking shapes and parameters."""
    batch, input_size = required_shape(ctx, "input", 2)
    rank = ctx.scalar("rank")
    num_filters = required_shape(ctx, "weights_feature", 2)[0]
    if rank <= 0 or num_filters % rank:
        raise BadDataError(f"{ctx.describe_input('rank')} is {rank}; it must be positive and"
                           f" divide the number of filters ({num_filters}, from"
                           f" {ctx.describe_input('weights_feature')})")
    expect_shape(ctx, "weights_feature", (num_filters, input_size))
    memory_size = required_shape(ctx, "weights_time", 2)[1]
    expect_shape(ctx, "weights_time", (num_filters, memory_size))
    num_units = num_filters // rank
    if ctx.has_input("bias"):
        expect_shape(ctx, "bias", (num_units,))
    expect_shape(ctx, "state_in", (batch, num_filters * memory_size))
    activation(ctx, "fuse_code", FUSE_CODES)
    return batch, num_units, rank, memory_size


def _prepare_svdf(ctx: KernelContext) -> list[Shape]:
    batch, num_units, rank, memory_size = _svdf_dims(ctx)
    return [(batch, num_units * rank * memory_size), (batch, num_units)]


@register(Op.SVDF, prepare=_prepare_svdf)
@ieee_float
def svdf(ctx: KernelContext) -> list[np.ndarray]:
    batch, num_units, rank, memory_size = _svdf_dims(ctx)
    weights_feature = ctx.float_input("weights_feature")
    weights_time = ctx.float_input("weights_time")
    memory = ctx.float_input("state_in").reshape(batch, num_units * rank, memory_size).copy()
    memory[:, :, -1] = ctx.float_input("input") @ weights_feature.T
    filtered = np.einsum("bfm,fm->bf", memory, weights_time)
    output = filtered.reshape(batch, num_units, rank).sum(axis=-1, dtype=np.float32)
    if ctx.has_input("bias"):
        output += ctx.float_input("bias")
    output = activation(ctx, "fuse_code", FUSE_CODES)(output)
    memory = np.concatenate([memory[:, :, 1:], np.zeros_like(memory[:, :, :1])], axis=-1)
    dtype = ctx.output_dtype()
    return [memory.reshape(batch, -1).astype(dtype), output.astype(dtype)]

