"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM.

All three run the one ``LstmCell`` of ``_recurrent`` (CIFG, peephole, projection with clipping,
layer normalization, auxiliary input), over one step or over a sequence in either direction.
Float16 is computed in float32 and cast back at the end, as Android does. Since API 30 the
sequence operations may also output their last output and cell states, and the bidirectional
one may feed its auxiliary input to the backward cell in place of the input (parallel
linking).
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ..context import KernelContext, Shape
from ..registry import register
from ._memo import per_operation
from ._recurrent import (
    CROSS_LINKING,
    LSTM_ACTIVATIONS,
    NO_LINKING,
    PARALLEL_LINKING,
    Activation,
    LstmCell,
    LstmConfig,
    LstmOperands,
    activation,
    check_aux_sequence,
    check_merged_outputs,
    ieee_float,
    linking_mode,
    load_lstm_cell,
    lstm_clip,
    lstm_config,
    required_shape,
    sequence_dims,
    time_major_view,
)

_SINGLE = LstmOperands()
_FORWARD = LstmOperands("fw_", "fw_activation_state", "fw_cell_state", has_aux=True)
_BACKWARD = LstmOperands("bw_", "bw_activation_state", "bw_cell_state", has_aux=True)


def _parameters(ctx: KernelContext) -> tuple[Activation, float, float]:
    """The activation and the two clipping thresholds, checked."""
    return (activation(ctx, "activation", LSTM_ACTIVATIONS), lstm_clip(ctx, "cell_clip"),
            lstm_clip(ctx, "proj_clip"))


def _load(ctx: KernelContext, at: LstmOperands, config: LstmConfig) -> LstmCell:
    return load_lstm_cell(ctx, at, config, *_parameters(ctx))


# --------------------------------------------------------------------------------------------
# LSTM: one time step with state and scratch buffer outputs (layer normalization weights
# only in the 27-input form of API level 29)


# The inputs an LSTM step's cell depends on only by their shapes: with constant weights (an
# unrolled layer), the checked configuration and stacked weights are read once and reused.
_STEP_SHAPES = frozenset({"input", "output_state_in", "cell_state_in"})


def _load_step_cell(ctx: KernelContext) -> LstmCell:
    batch, input_size = required_shape(ctx, "input", 2)
    return _load(ctx, _SINGLE, lstm_config(ctx, _SINGLE, batch, input_size))


def lstm_step_cell(ctx: KernelContext) -> LstmCell:
    """The checked cell of an LSTM step, read once per operation and input shapes; the
    native kernel packs its weights from it."""
    return per_operation(ctx, "cell", _load_step_cell, shape_only=_STEP_SHAPES)


def _prepare_lstm(ctx: KernelContext) -> list[Shape]:
    batch = required_shape(ctx, "input", 2)[0]
    config = lstm_step_cell(ctx).config
    return [(batch, len(config.gates) * config.num_cells), (batch, config.output_size),
            (batch, config.num_cells), (batch, config.output_size)]


@register(Op.LSTM, prepare=_prepare_lstm)
@ieee_float
def lstm(ctx: KernelContext) -> list[np.ndarray]:
    cell = lstm_step_cell(ctx)
    _, h, c, scratch = cell.run(ctx.float_input("input")[None],
                                ctx.float_input(_SINGLE.output_state),
                                ctx.float_input(_SINGLE.cell_state))
    dtype = ctx.output_dtype()
    return [scratch.astype(dtype), h.astype(dtype), c.astype(dtype), h.astype(dtype)]


# --------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_LSTM


def _unidirectional_config(ctx: KernelContext) -> tuple[bool, LstmConfig]:
    time_major = bool(ctx.scalar("time_major"))
    _, batch, input_size = sequence_dims(ctx, "input", time_major)
    return time_major, lstm_config(ctx, _SINGLE, batch, input_size)


def _prepare_unidirectional(ctx: KernelContext) -> list[Shape]:
    time_major, config = _unidirectional_config(ctx)
    _parameters(ctx)
    batch = sequence_dims(ctx, "input", time_major)[1]
    states = [(batch, config.output_size), (batch, config.num_cells)] \
        if ctx.output_count("output_state_out") else []
    return [ctx.input_shape("input")[:2] + (config.output_size,), *states]


@register(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, prepare=_prepare_unidirectional)
@ieee_float
def unidirectional_sequence_lstm(ctx: KernelContext) -> list[np.ndarray]:
    time_major, config = _unidirectional_config(ctx)
    cell = _load(ctx, _SINGLE, config)
    outputs, h, c, _ = cell.run(time_major_view(ctx.float_input("input"), time_major),
                                ctx.float_input(_SINGLE.output_state),
                                ctx.float_input(_SINGLE.cell_state))
    dtype = ctx.output_dtype()
    states = [h.astype(dtype), c.astype(dtype)] if ctx.output_count("output_state_out") else []
    return [np.ascontiguousarray(time_major_view(outputs, time_major), dtype), *states]


# --------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_LSTM


def _bidirectional_configs(ctx: KernelContext) \
        -> tuple[bool, bool, str, int, LstmConfig, LstmConfig]:
    """(time_major, merge_outputs, linking mode, batch, forward and backward configs)."""
    time_major = bool(ctx.scalar("time_major"))
    merge = check_merged_outputs(ctx)
    steps, batch, input_size = sequence_dims(ctx, "input", time_major)
    linking = linking_mode(ctx, _FORWARD.aux_to("forget"), _BACKWARD.aux_to("forget"))
    aux_size = check_aux_sequence(ctx, time_major, steps, batch) \
        if linking != NO_LINKING else None
    cross_size = aux_size if linking == CROSS_LINKING else None
    fw = lstm_config(ctx, _FORWARD, batch, input_size, cross_size)
    # In parallel linking the auxiliary input is the backward cell's input.
    bw_input_size = aux_size if linking == PARALLEL_LINKING and aux_size is not None \
        else input_size
    bw = lstm_config(ctx, _BACKWARD, batch, bw_input_size, cross_size)
    return time_major, merge, linking, batch, fw, bw


def _prepare_bidirectional(ctx: KernelContext) -> list[Shape]:
    _, merge, _, batch, fw, bw = _bidirectional_configs(ctx)
    _parameters(ctx)
    leading = ctx.input_shape("input")[:2]
    outputs = [leading + (fw.output_size + bw.output_size,)] if merge else \
        [leading + (fw.output_size,), leading + (bw.output_size,)]
    if ctx.output_count("fw_output_state_out"):
        outputs += [(batch, fw.output_size), (batch, fw.num_cells), (batch, bw.output_size),
                    (batch, bw.num_cells)]
    return outputs


@register(Op.BIDIRECTIONAL_SEQUENCE_LSTM, prepare=_prepare_bidirectional)
@ieee_float
def bidirectional_sequence_lstm(ctx: KernelContext) -> list[np.ndarray]:
    time_major, merge, linking, _, fw_config, bw_config = _bidirectional_configs(ctx)
    x = time_major_view(ctx.float_input("input"), time_major)
    aux = time_major_view(ctx.float_input("aux_input"), time_major) \
        if linking != NO_LINKING else None
    cross = aux if linking == CROSS_LINKING else None
    results, states = [], []
    for at, config, reverse in ((_FORWARD, fw_config, False), (_BACKWARD, bw_config, True)):
        cell = _load(ctx, at, config)
        inputs = aux if linking == PARALLEL_LINKING and reverse and aux is not None else x
        outputs, h, c, _ = cell.run(inputs, ctx.float_input(at.output_state),
                                    ctx.float_input(at.cell_state), cross, reverse)
        results.append(outputs)
        states += [h, c]
    if merge:
        results = [np.concatenate(results, axis=-1)]
    dtype = ctx.output_dtype("fw_output")
    sequences = [np.ascontiguousarray(time_major_view(r, time_major), dtype) for r in results]
    if not ctx.output_count("fw_output_state_out"):
        return sequences
    return [*sequences, *(state.astype(dtype) for state in states)]
