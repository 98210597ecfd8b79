"""The cells shared by the recurrent kernels: one LSTM cell and one RNN cell, in float32.

LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM all read their operands
with ``lstm_config``/``load_lstm_cell`` and run ``LstmCell``; RNN and the sequence RNNs all run
``RnnCell``. Callers pass float32 arrays (float16 operands are computed in float32
and cast back, as Android does). Everything is vectorized over the batch; sequences loop over
time steps only, after computing the input contributions of all steps at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np

from ...nnapi.errors import BadDataError
from ..context import KernelContext, Shape
from ._common import check_rank

Activation = Callable[[np.ndarray], np.ndarray]
F = TypeVar("F", bound=Callable[..., object])


def ieee_float(execute: F) -> F:
    """Runs a float kernel with NumPy's floating-point warnings off: infinities and NaNs in the
    data propagate through the arithmetic, as in Android's C++ kernels."""

    @functools.wraps(execute)
    def wrapper(*args: object, **kwargs: object) -> object:
        with np.errstate(all="ignore"):
            return execute(*args, **kwargs)

    return cast("F", wrapper)  # functools.wraps keeps execute's signature


# --------------------------------------------------------------------------------------------
# Activations (TFLite's fused activation codes, which extend NNAPI's FuseCode)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return cast("np.ndarray", np.float32(1.0) / (np.float32(1.0) + np.exp(-x)))


_ACTIVATIONS: dict[int, tuple[str, Activation]] = {
    0: ("none", lambda x: x),
    1: ("relu", lambda x: np.maximum(x, np.float32(0.0))),
    2: ("relu1", lambda x: np.clip(x, np.float32(-1.0), np.float32(1.0))),
    3: ("relu6", lambda x: np.clip(x, np.float32(0.0), np.float32(6.0))),
    4: ("tanh", np.tanh),
    6: ("sigmoid", _sigmoid),
}
FUSE_CODES = (0, 1, 2, 3)
LSTM_ACTIVATIONS = (0, 1, 3, 4, 6)


def activation(ctx: KernelContext, name: str, allowed: Sequence[int]) -> Activation:
    """The activation function chosen by scalar input ``name``, one of the ``allowed`` codes."""
    code = int(ctx.scalar(name))
    if code not in allowed:
        names = ", ".join(f"{c} ({_ACTIVATIONS[c][0]})" for c in allowed)
        raise BadDataError(f"{ctx.describe_input(name)} is activation {code}; expected one of"
                           f" {names}")
    return _ACTIVATIONS[code][1]


# --------------------------------------------------------------------------------------------
# Shape checks with messages that name the operand


def required_shape(ctx: KernelContext, name: str, rank: int) -> Shape:
    """Input ``name``'s shape, after checking it has a value and rank ``rank``."""
    if not ctx.has_input(name):
        raise BadDataError(f"{ctx.describe_input(name)} is required but has no value")
    return tuple(check_rank(ctx, name, (rank,)))


def expect_shape(ctx: KernelContext, name: str, expected: Sequence[int]) -> None:
    shape = required_shape(ctx, name, len(expected))
    if shape != tuple(expected):
        raise BadDataError(f"{ctx.describe_input(name)} must have shape {list(expected)}, got"
                           f" {list(shape)}")


def time_major_view(x: np.ndarray, time_major: bool) -> np.ndarray:
    """[time, batch, ...] from either layout (a view, no copy)."""
    return x if time_major else x.swapaxes(0, 1)


def sequence_dims(ctx: KernelContext, name: str, time_major: bool) -> tuple[int, int, int]:
    """(max_time, batch, features) of a rank-3 sequence input in either layout."""
    first, second, features = required_shape(ctx, name, 3)
    return (first, second, features) if time_major else (second, first, features)


def check_merged_outputs(ctx: KernelContext) -> bool:
    """A bidirectional operation's merge_outputs flag, checked against its outputs: merged
    outputs come out of fw_output alone (the "merged" form), otherwise bw_output is there
    too; the final states, when asked for (API 30), follow."""
    merge = bool(ctx.scalar("merge_outputs"))
    if merge != (ctx.form == "merged"):
        raise BadDataError(f"{ctx.describe_input('merge_outputs')} is {merge}, so the operation"
                           f" needs {'only fw_output' if merge else 'fw_output and bw_output'}"
                           " (then, optionally, the states), but its outputs are the"
                           f" {ctx.form} form's")
    return merge


# How a bidirectional operation uses its auxiliary input: not at all, as the backward cell's
# input instead of the input (PARALLEL, API 30), or through auxiliary weights into both cells
# beside the input (CROSS).
NO_LINKING, PARALLEL_LINKING, CROSS_LINKING = "none", "parallel", "cross"


def linking_mode(ctx: KernelContext, fw_weights: str, bw_weights: str) -> str:
    """The linking mode the auxiliary input and the weights ``fw_weights``/``bw_weights``
    (which must both be given or both be omitted) say."""
    has_weights = all_or_none(ctx, (fw_weights, bw_weights), "auxiliary weights")
    if not ctx.has_input("aux_input"):
        if has_weights:
            raise BadDataError(f"auxiliary weights need {ctx.describe_input('aux_input')}")
        return NO_LINKING
    return CROSS_LINKING if has_weights else PARALLEL_LINKING


def check_aux_sequence(ctx: KernelContext, time_major: bool, steps: int, batch: int) -> int:
    """The auxiliary input's feature size, after checking its time and batch dimensions are
    the input's."""
    aux_steps, aux_batch, aux_size = sequence_dims(ctx, "aux_input", time_major)
    if (aux_steps, aux_batch) != (steps, batch):
        raise BadDataError(f"{ctx.describe_input('aux_input')} has shape"
                           f" {list(ctx.input_shape('aux_input'))}; its time and batch"
                           " dimensions must match the input's"
                           f" {list(ctx.input_shape('input'))}")
    return aux_size


def all_or_none(ctx: KernelContext, names: Sequence[str], what: str) -> bool:
    """True when all of these optional inputs have values, False when none has."""
    have = [ctx.has_input(name) for name in names]
    if any(have) and not all(have):
        given = ", ".join(ctx.describe_input(name) for name in names)
        raise BadDataError(f"{what}: {given} must all have values or all be omitted")
    return all(have)


# --------------------------------------------------------------------------------------------
# LSTM

_GATES = ("input", "forget", "cell", "output")
_PEEPHOLE_GATES = ("input", "forget", "output")
LAYER_NORM_EPSILON = 1e-8


@dataclass(frozen=True)
class LstmOperands:
    """The names of one LSTM cell's inputs, as the operations' signatures declare them: the
    weights carry BIDIRECTIONAL_SEQUENCE_LSTM's ``fw_``/``bw_`` prefix, the states are named
    per operation."""

    prefix: str = ""
    output_state: str = "output_state_in"
    cell_state: str = "cell_state_in"
    has_aux: bool = False  # the operation declares auxiliary input weights

    def input_to(self, gate: str) -> str:
        return f"{self.prefix}input_to_{gate}_weights"

    def recurrent_to(self, gate: str) -> str:
        return f"{self.prefix}recurrent_to_{gate}_weights"

    def cell_to(self, gate: str) -> str:
        return f"{self.prefix}cell_to_{gate}_weights"

    def bias(self, gate: str) -> str:
        return f"{self.prefix}cell_bias" if gate == "cell" else f"{self.prefix}{gate}_gate_bias"

    def layer_norm(self, gate: str) -> str:
        return f"{self.prefix}{gate}_layer_norm_weights"

    def aux_to(self, gate: str) -> str:
        return f"{self.prefix}aux_input_to_{gate}_weights"

    @property
    def projection(self) -> str:
        return f"{self.prefix}projection_weights"

    @property
    def projection_bias(self) -> str:
        return f"{self.prefix}projection_bias"


@dataclass(frozen=True)
class LstmConfig:
    """What one LSTM cell's operands say about it, checked for consistency."""

    num_cells: int
    output_size: int
    cifg: bool
    peephole: bool
    layer_norm: bool
    projection: bool
    aux: bool

    @property
    def gates(self) -> tuple[str, ...]:
        return _GATES[1:] if self.cifg else _GATES


def _optional_per_gate(ctx: KernelContext, name_of: Callable[[str], str],
                       group: Sequence[str], gates: Sequence[str], what: str,
                       shape: Sequence[int]) -> bool:
    """Whether a group of optional per-gate operands (peephole, layer normalization or
    auxiliary weights, named by ``name_of(gate)``) is present; all or none of the cell's gates,
    and never the input gate's with CIFG."""
    if "input" not in gates and ctx.has_input(name_of("input")):
        raise BadDataError(f"{ctx.describe_input(name_of('input'))} must be omitted when CIFG"
                           " is used (no input-to-input weights)")
    names = [name_of(gate) for gate in group if gate in gates]
    present = all_or_none(ctx, names, what)
    for name in names if present else ():
        expect_shape(ctx, name, shape)
    return present


def lstm_config(ctx: KernelContext, at: LstmOperands, batch: int, input_size: int,
                aux_input_size: int | None = None) -> LstmConfig:
    """Checks one LSTM cell's operand shapes and which optional ones are present."""
    num_cells = required_shape(ctx, at.input_to("output"), 2)[0]
    output_size = required_shape(ctx, at.recurrent_to("output"), 2)[1]
    cifg = not all_or_none(ctx, [at.input_to("input"), at.recurrent_to("input"),
                                 at.bias("input")], "CIFG")
    gates = _GATES[1:] if cifg else _GATES
    for gate in gates:
        expect_shape(ctx, at.input_to(gate), (num_cells, input_size))
        expect_shape(ctx, at.recurrent_to(gate), (num_cells, output_size))
        expect_shape(ctx, at.bias(gate), (num_cells,))
    peephole = _optional_per_gate(ctx, at.cell_to, _PEEPHOLE_GATES, gates, "peephole",
                                  (num_cells,))
    projection = ctx.has_input(at.projection)
    if projection:
        expect_shape(ctx, at.projection, (output_size, num_cells))
    elif output_size != num_cells:
        raise BadDataError(f"without projection weights the output size ({output_size}, from"
                           f" {ctx.describe_input(at.recurrent_to('output'))}) must equal the"
                           f" number of cells ({num_cells})")
    if ctx.has_input(at.projection_bias):
        if not projection:
            raise BadDataError(f"{ctx.describe_input(at.projection_bias)} needs projection"
                               " weights")
        expect_shape(ctx, at.projection_bias, (output_size,))
    layer_norm = _optional_per_gate(ctx, at.layer_norm, _GATES, gates, "layer normalization",
                                    (num_cells,))
    aux = False
    if at.has_aux:
        aux = any(ctx.has_input(at.aux_to(gate)) for gate in _GATES)
        if aux != (aux_input_size is not None):
            raise BadDataError("the auxiliary input and the auxiliary weights must both have"
                               " values or both be omitted")
        aux = aux_input_size is not None and _optional_per_gate(ctx, at.aux_to, _GATES, gates,
                                         "auxiliary input weights", (num_cells, aux_input_size))
    expect_shape(ctx, at.output_state, (batch, output_size))
    expect_shape(ctx, at.cell_state, (batch, num_cells))
    return LstmConfig(num_cells, output_size, cifg, peephole, layer_norm, projection, aux)


def lstm_clip(ctx: KernelContext, name: str) -> float:
    clip = float(ctx.scalar(name))
    if not clip >= 0.0:
        raise BadDataError(f"{ctx.describe_input(name)} must be >= 0 (0 disables clipping), got"
                           f" {clip}")
    return clip


@dataclass
class LstmCell:
    """One LSTM cell's float32 parameters; gates are stacked in ``config.gates`` order. The
    optional parts are set after construction, those the config says are present
    (load_lstm_cell)."""

    config: LstmConfig
    input_weights: np.ndarray  # [gates * cells, input_size]
    recurrent_weights: np.ndarray  # [gates * cells, output_size]
    bias: np.ndarray  # [gates, cells]
    activation: Activation
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    aux_weights: np.ndarray | None = field(default=None, init=False)  # [gates * cells, aux]
    peephole: dict[str, np.ndarray] | None = field(default=None, init=False)  # by gate
    layer_norm: np.ndarray | None = field(default=None, init=False)  # [gates, cells]
    projection: np.ndarray | None = field(default=None, init=False)  # [output_size, cells]
    projection_bias: np.ndarray | None = field(default=None, init=False)

    def run(self, x: np.ndarray, h: np.ndarray, c: np.ndarray, aux: np.ndarray | None = None,
            reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Runs over time-major ``x`` [time, batch, input]; returns the outputs [time, batch,
        output_size], the last output and cell states, and the last step's scratch buffer."""
        steps, batch = x.shape[0], x.shape[1]
        num_gates, cells = self.bias.shape
        from_input = (x @ self.input_weights.T).reshape(steps, batch, num_gates, cells)
        if aux is not None:
            if self.aux_weights is None:
                raise BadDataError("an auxiliary input needs auxiliary input weights")
            from_input += (aux @ self.aux_weights.T).reshape(steps, batch, num_gates, cells)
        outputs = np.empty((steps, batch, self.config.output_size), np.float32)
        scratch = np.zeros((batch, num_gates * cells), np.float32)
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h, c, scratch = self.step(from_input[t], h, c)
            outputs[t] = h
        return outputs, h, c, scratch

    def step(self, from_input: np.ndarray, h: np.ndarray, c_prev: np.ndarray) \
            -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One time step from the input contribution [batch, gates, cells] and the states."""
        batch = h.shape[0]
        index = {g: k for k, g in enumerate(self.config.gates)}
        pre = from_input + (h @ self.recurrent_weights.T).reshape(from_input.shape)
        if self.layer_norm is None:
            pre += self.bias
        peephole = self.peephole or {}

        def gate(name: str, cell_state: np.ndarray | None = None) -> np.ndarray:
            k = index[name]
            value = pre[:, k]
            if name in peephole:
                value = value + peephole[name] * cell_state
            if self.layer_norm is not None:
                value = _normalize(value) * self.layer_norm[k] + self.bias[k]
            return cast("np.ndarray", value)

        forget = _sigmoid(gate("forget", c_prev))
        candidate = self.activation(gate("cell"))
        input_gate = np.float32(1.0) - forget if self.config.cifg \
            else _sigmoid(gate("input", c_prev))
        c = forget * c_prev + input_gate * candidate
        if self.cell_clip > 0:
            c = np.clip(c, -self.cell_clip, self.cell_clip)
        output_gate = _sigmoid(gate("output", c))
        cell_activation = self.activation(c)
        hidden = output_gate * cell_activation
        if self.projection is not None:
            out = hidden @ self.projection.T
            if self.projection_bias is not None:
                out += self.projection_bias
            if self.proj_clip > 0:
                out = np.clip(out, -self.proj_clip, self.proj_clip)
        else:
            out = hidden
        # Android's scratch buffer holds, per gate block: the input gate, the cell activation,
        # the forget gate (1 - forget with CIFG) and the gated output.
        blocks = [cell_activation, input_gate if self.config.cifg else forget, hidden]
        if not self.config.cifg:
            blocks.insert(0, input_gate)
        scratch = np.stack(blocks).reshape(batch, -1)
        return out.astype(np.float32, copy=False), c.astype(np.float32, copy=False), scratch


def _normalize(x: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance along the cells (TFLite's MeanStddevNormalization: variance as
    E[x^2] - E[x]^2, epsilon only for a zero variance; also for a negative one from rounding,
    where TFLite would produce NaN)."""
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
    variance = (x * x).mean(axis=-1, keepdims=True, dtype=np.float32) - mean * mean
    variance = np.where(variance <= 0, np.float32(LAYER_NORM_EPSILON), variance)
    return cast("np.ndarray", (x - mean) / np.sqrt(variance))


def load_lstm_cell(ctx: KernelContext, at: LstmOperands, config: LstmConfig,
                   act: Activation, cell_clip: float, proj_clip: float) -> LstmCell:
    """Reads one LSTM cell's present operands as float32."""
    gates = config.gates

    def stacked(name_of: Callable[[str], str]) -> np.ndarray:
        return np.concatenate([ctx.float_input(name_of(gate)) for gate in gates])

    cell = LstmCell(config, stacked(at.input_to), stacked(at.recurrent_to),
                    stacked(at.bias).reshape(len(gates), -1), act, cell_clip, proj_clip)
    if config.aux:
        cell.aux_weights = stacked(at.aux_to)
    if config.peephole:
        cell.peephole = {g: ctx.float_input(at.cell_to(g))
                         for g in _PEEPHOLE_GATES if g in gates}
    if config.layer_norm:
        cell.layer_norm = stacked(at.layer_norm).reshape(len(gates), -1)
    if config.projection:
        cell.projection = ctx.float_input(at.projection)
        if ctx.has_input(at.projection_bias):
            cell.projection_bias = ctx.float_input(at.projection_bias)
    return cell


# --------------------------------------------------------------------------------------------
# RNN


@dataclass
class RnnCell:
    """A basic RNN cell: state = activation(x W' + aux A' + state R' + bias)."""

    weights: np.ndarray  # [units, input_size]
    recurrent_weights: np.ndarray  # [units, units]
    bias: np.ndarray  # [units]
    activation: Activation
    aux_weights: np.ndarray | None = None  # [units, aux_input_size]

    def input_contribution(self, x: np.ndarray, aux: np.ndarray | None = None) -> np.ndarray:
        """x W' + aux A' + bias for any leading dimensions (all time steps at once)."""
        result = x @ self.weights.T + self.bias
        if aux is not None:
            if self.aux_weights is None:
                raise BadDataError("an auxiliary input needs auxiliary input weights")
            result += aux @ self.aux_weights.T
        return cast("np.ndarray", result)

    def step(self, from_input: np.ndarray, state: np.ndarray) -> np.ndarray:
        return self.activation(from_input + state @ self.recurrent_weights.T)

    def run(self, x: np.ndarray, state: np.ndarray, aux: np.ndarray | None = None,
            reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Runs over time-major ``x``; returns outputs [time, batch, units] and the last state."""
        from_input = self.input_contribution(x, aux)
        outputs = np.empty(from_input.shape, np.float32)
        for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
            state = self.step(from_input[t], state)
            outputs[t] = state
        return outputs, state


def rnn_units(ctx: KernelContext, weights: str, recurrent: str, bias: str, state: str,
              batch: int, input_size: int) -> int:
    """Checks one RNN cell's weight, bias and state shapes; returns its number of units."""
    units = required_shape(ctx, weights, 2)[0]
    expect_shape(ctx, weights, (units, input_size))
    expect_shape(ctx, recurrent, (units, units))
    expect_shape(ctx, bias, (units,))
    expect_shape(ctx, state, (batch, units))
    return units
