"""Native LSTM and RNN time steps (recurrent.c), float32.

A recurrent layer converted from PyTorch is unrolled into one LSTM or RNN operation per time
step, each on a few dozen values: the reference kernel's NumPy arithmetic costs tens of
microseconds a step where the arithmetic needs one or two. The runners read the cell with the
reference's own loaders (its checks, its stacking of the gates) and hand C the weights
transposed once; with weights the model computes (as the conformance tests feed them) they
are read again at every execution. Results agree with the reference within float32 rounding
(sums in another order, the C library's exp and tanh). Float16 operations stay with the
reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..context import KernelContext
from ..ops import lstm as lstm_ref
from ..ops import rnn as rnn_ref
from ..registry import Runner, register_native
from . import module

_F32 = OperandType.TENSOR_FLOAT32
_LSTM_STEP = ("input", "output_state_in", "cell_state_in")
_RNN_STEP = ("input", "hidden_state_in")


def _transposed(*blocks: np.ndarray) -> np.ndarray:
    """[W R]' as C reads it: row i holds what the i-th input (then state) value adds to each
    gate."""
    return np.ascontiguousarray(np.concatenate(blocks, axis=1).T, np.float32)


def _lstm_plan(ctx: KernelContext) -> Any:
    """The cell as C runs it (a copy of its weights, transposed): read with the reference's
    loader, which checks the operands and stacks the gates."""
    cell = lstm_ref.lstm_step_cell(ctx)
    config = cell.config
    zeros = np.zeros(config.num_cells, np.float32)
    peephole = None if cell.peephole is None else np.ascontiguousarray(np.stack(
        [cell.peephole.get(gate, zeros) for gate in ("input", "forget", "output")]))
    return module().lstm_plan(
        (cell.input_weights.shape[1], config.num_cells, config.output_size, len(config.gates),
         int(ctx.scalar("activation"))),
        (cell.cell_clip, cell.proj_clip),
        _transposed(cell.input_weights, cell.recurrent_weights),
        np.ascontiguousarray(cell.bias.reshape(-1)), peephole,
        None if cell.layer_norm is None else np.ascontiguousarray(cell.layer_norm.ravel()),
        None if cell.projection is None else np.ascontiguousarray(cell.projection.T),
        None if cell.projection_bias is None else np.ascontiguousarray(cell.projection_bias))


@register_native(Op.LSTM)
def lstm(ctx: KernelContext) -> Runner | None:
    if ctx.input_type("input") != _F32:
        return None
    x_at, h_at, c_at = (ctx.input_position(name) for name in _LSTM_STEP)
    batch = ctx.input("input").shape[0]
    config = lstm_ref.lstm_step_cell(ctx).config
    scratch_shape = (batch, len(config.gates) * config.num_cells)
    h_shape, c_shape = (batch, config.output_size), (batch, config.num_cells)
    fixed = _lstm_plan(ctx) if ctx.variable_inputs <= set(_LSTM_STEP) else None
    context_of = ctx.on_arguments()
    step = module().lstm_step_f32

    def run(*values: Any) -> list[np.ndarray]:
        plan = fixed if fixed is not None else _lstm_plan(context_of(values))
        scratch = np.empty(scratch_shape, np.float32)
        h, c = np.empty(h_shape, np.float32), np.empty(c_shape, np.float32)
        step(plan, values[x_at], values[h_at], values[c_at], scratch, h, c)
        return [scratch, h, c, h.copy()]

    return run


def _rnn_arguments(ctx: KernelContext, batch: int) -> tuple[Any, ...]:
    """rnn_step_f32's arguments before the input and state."""
    cell = rnn_ref.rnn_step_cell(ctx)
    units, inputs = cell.weights.shape
    return ((batch, inputs, units, int(ctx.scalar("fuse_code"))),
            _transposed(cell.weights, cell.recurrent_weights),
            np.ascontiguousarray(cell.bias, np.float32))


@register_native(Op.RNN)
def rnn(ctx: KernelContext) -> Runner | None:
    if ctx.input_type("input") != _F32:
        return None
    x_at, h_at = (ctx.input_position(name) for name in _RNN_STEP)
    batch = ctx.input("input").shape[0]
    fixed = _rnn_arguments(ctx, batch) if ctx.variable_inputs <= set(_RNN_STEP) else None
    context_of = ctx.on_arguments()
    step = module().rnn_step_f32

    def run(*values: Any) -> list[np.ndarray]:
        arguments = fixed if fixed is not None else _rnn_arguments(context_of(values), batch)
        state = np.empty((batch, arguments[0][2]), np.float32)
        step(*arguments, values[x_at], values[h_at], state)
        return [state, state.copy()]

    return run
