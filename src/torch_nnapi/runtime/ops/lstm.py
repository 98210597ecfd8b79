"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM.

All three run the one ``LstmCell`` of ``_recurrent`` (CIFG, peephole, projection with clipping,
layer normalization, auxiliary input), over one step or over a sequence in either direction.
Float16 is computed in float32 and cast back at the end, as Android does.
"""

from __future__ import annotations

import numpy as np

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ..registry import register
from ._recurrent import (
    LSTM_ACTIVATIONS,
    Activation,
    LstmCell,
    LstmConfig,
    LstmOperands,
    activation,
    ieee_float,
    load_lstm_cell,
    lstm_clip,
    lstm_config,
    required_shape,
    sequence_dims,
    time_major_view,
)

# Input positions of the operations' scalar parameters.
_ACTIVATION, _CELL_CLIP, _PROJ_CLIP, _TIME_MAJOR = 20, 21, 22, 23
_BIDI_AUX_INPUT, _BIDI_ACTIVATION, _BIDI_CELL_CLIP, _BIDI_PROJ_CLIP = 39, 48, 49, 50
_BIDI_MERGE_OUTPUTS, _BIDI_TIME_MAJOR = 51, 52

_UNIDIRECTIONAL = LstmOperands(weights=1, output_state=18, cell_state=19, layer_norm=24)
_FORWARD = LstmOperands(weights=1, output_state=35, cell_state=36, layer_norm=53,
                        aux_weights=40)
_BACKWARD = LstmOperands(weights=18, output_state=37, cell_state=38, layer_norm=57,
                         aux_weights=44)


def _single_step_operands(ctx: KernelContext) -> LstmOperands:
    """LSTM has layer normalization weights only in its 27-input form (API level 29)."""
    return LstmOperands(weights=1, output_state=18, cell_state=19,
                        layer_norm=23 if ctx.num_inputs == 27 else None)


def _parameters(ctx: KernelContext, act: int, cell_clip: int, proj_clip: int) \
        -> tuple[Activation, float, float]:
    """The activation and the two clipping thresholds, checked."""
    return (activation(ctx, act, LSTM_ACTIVATIONS), lstm_clip(ctx, cell_clip),
            lstm_clip(ctx, proj_clip))


def _load(ctx: KernelContext, at: LstmOperands, config: LstmConfig, act: int, cell_clip: int,
          proj_clip: int) -> LstmCell:
    return load_lstm_cell(ctx, at, config, *_parameters(ctx, act, cell_clip, proj_clip))


# --------------------------------------------------------------------------------------------
# LSTM: one time step with state and scratch buffer outputs


def _prepare_lstm(ctx: KernelContext) -> list[Shape]:
    batch, input_size = required_shape(ctx, 0, 2)
    config = lstm_config(ctx, _single_step_operands(ctx), batch, input_size)
    _parameters(ctx, _ACTIVATION, _CELL_CLIP, _PROJ_CLIP)
    return [(batch, len(config.gates) * config.num_cells), (batch, config.output_size),
            (batch, config.num_cells), (batch, config.output_size)]


@register(Op.LSTM, prepare=_prepare_lstm)
@ieee_float
def lstm(ctx: KernelContext) -> list[np.ndarray]:
    at = _single_step_operands(ctx)
    batch, input_size = ctx.input_shape(0)
    config = lstm_config(ctx, at, batch, input_size)
    cell = _load(ctx, at, config, _ACTIVATION, _CELL_CLIP, _PROJ_CLIP)
    _, h, c, scratch = cell.run(ctx.float_input(0)[None], ctx.float_input(at.output_state),
                                ctx.float_input(at.cell_state))
    dtype = ctx.output_dtype()
    return [scratch.astype(dtype), h.astype(dtype), c.astype(dtype), h.astype(dtype)]


# --------------------------------------------------------------------------------------------
# UNIDIRECTIONAL_SEQUENCE_LSTM


def _unidirectional_config(ctx: KernelContext) -> tuple[bool, tuple[int, int, int],
                                                         LstmConfig]:
    time_major = bool(ctx.scalar(_TIME_MAJOR))
    steps, batch, input_size = sequence_dims(ctx, 0, time_major)
    config = lstm_config(ctx, _UNIDIRECTIONAL, batch, input_size)
    return time_major, (steps, batch, input_size), config


def _prepare_unidirectional(ctx: KernelContext) -> list[Shape]:
    _, _, config = _unidirectional_config(ctx)
    _parameters(ctx, _ACTIVATION, _CELL_CLIP, _PROJ_CLIP)
    return [ctx.input_shape(0)[:2] + (config.output_size,)]


@register(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, prepare=_prepare_unidirectional)
@ieee_float
def unidirectional_sequence_lstm(ctx: KernelContext) -> np.ndarray:
    time_major, _, config = _unidirectional_config(ctx)
    cell = _load(ctx, _UNIDIRECTIONAL, config, _ACTIVATION, _CELL_CLIP, _PROJ_CLIP)
    outputs, _, _, _ = cell.run(time_major_view(ctx.float_input(0), time_major),
                                ctx.float_input(_UNIDIRECTIONAL.output_state),
                                ctx.float_input(_UNIDIRECTIONAL.cell_state))
    return np.ascontiguousarray(time_major_view(outputs, time_major), ctx.output_dtype())


# --------------------------------------------------------------------------------------------
# BIDIRECTIONAL_SEQUENCE_LSTM


def _bidirectional_configs(ctx: KernelContext) -> tuple[bool, bool, LstmConfig, LstmConfig]:
    time_major = bool(ctx.scalar(_BIDI_TIME_MAJOR))
    merge = bool(ctx.scalar(_BIDI_MERGE_OUTPUTS))
    if ctx.num_outputs != (1 if merge else 2):
        raise BadDataError(f"merge_outputs is {merge}, so the operation must have"
                           f" {1 if merge else 2} outputs, not {ctx.num_outputs}")
    steps, batch, input_size = sequence_dims(ctx, 0, time_major)
    aux_input_size = None
    if ctx.has_input(_BIDI_AUX_INPUT):
        aux_steps, aux_batch, aux_input_size = sequence_dims(ctx, _BIDI_AUX_INPUT, time_major)
        if (aux_steps, aux_batch) != (steps, batch):
            raise BadDataError(f"input {_BIDI_AUX_INPUT} (aux_input) has shape"
                               f" {list(ctx.input_shape(_BIDI_AUX_INPUT))}; its time and batch"
                               f" dimensions must match the input's"
                               f" {list(ctx.input_shape(0))}")
    fw = lstm_config(ctx, _FORWARD, batch, input_size, aux_input_size)
    bw = lstm_config(ctx, _BACKWARD, batch, input_size, aux_input_size)
    return time_major, merge, fw, bw


def _prepare_bidirectional(ctx: KernelContext) -> list[Shape]:
    _, merge, fw, bw = _bidirectional_configs(ctx)
    _parameters(ctx, _BIDI_ACTIVATION, _BIDI_CELL_CLIP, _BIDI_PROJ_CLIP)
    leading = ctx.input_shape(0)[:2]
    if merge:
        return [leading + (fw.output_size + bw.output_size,)]
    return [leading + (fw.output_size,), leading + (bw.output_size,)]


@register(Op.BIDIRECTIONAL_SEQUENCE_LSTM, prepare=_prepare_bidirectional)
@ieee_float
def bidirectional_sequence_lstm(ctx: KernelContext) -> list[np.ndarray]:
    time_major, merge, fw_config, bw_config = _bidirectional_configs(ctx)
    x = time_major_view(ctx.float_input(0), time_major)
    aux = time_major_view(ctx.float_input(_BIDI_AUX_INPUT), time_major) \
        if ctx.has_input(_BIDI_AUX_INPUT) else None
    results = []
    for at, config, reverse in ((_FORWARD, fw_config, False), (_BACKWARD, bw_config, True)):
        cell = _load(ctx, at, config, _BIDI_ACTIVATION, _BIDI_CELL_CLIP, _BIDI_PROJ_CLIP)
        outputs, _, _, _ = cell.run(x, ctx.float_input(at.output_state),
                                    ctx.float_input(at.cell_state), aux, reverse)
        results.append(outputs)
    if merge:
        results = [np.concatenate(results, axis=-1)]
    dtype = ctx.output_dtype()
    return [np.ascontiguousarray(time_major_view(r, time_major), dtype) for r in results]
