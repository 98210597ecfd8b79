"""Recurrent layers: aten::lstm, gru, rnn_tanh, rnn_relu and their one-step cells.

NNAPI's sequence operations do not fit PyTorch's layers as PyTorch Mobile loads models: the
LSTM ones (UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_LSTM) take layer-normalization weights and
BIDIRECTIONAL_SEQUENCE_RNN auxiliary inputs that a plain layer has to leave out, and PyTorch's
serialized NNAPI format (nnapi_model_loader.cpp) cannot leave an operand out (every value it
sets has a pointer); their final states also came only with feature level 4. So a layer is
unrolled over its time steps, known at conversion time: the input is cut into steps once
(SPLIT), every step is one cell, and the step outputs are joined (CONCATENATION); the last
step's states are the final states. The cells:

- LSTM: NNAPI's LSTM operation (feature level 1), which also outputs both states. It has no
  way to leave out peephole weights and a projection either, so zero peephole weights and an
  identity projection stand for absent ones; both are exact.
- RNN with ReLU: NNAPI's RNN with a fused RELU.
- RNN with tanh: NNAPI's RNN without activation (its activation is a fuse code: no tanh),
  then TANH.
- GRU (NNAPI has none), up to 32 units: two LSTM operations and a CONCATENATION. With gate
  biases that saturate the sigmoid exactly (input gate 1, forget gate 0) and no activation,
  an LSTM's cell state is h W_hn + b_hn and its output m = r (h W_hn + b_hn), r being its
  output gate. A second LSTM on [x, m] with the state h as its cell state, forget gate z,
  input gate sigmoid(-z's sum) = 1 - z and candidate tanh(x W_in + b_in + m) leaves
  h' = z h + (1 - z) n as its cell state. A small step's time goes to dispatching
  operations, so three beat eleven; from 33 units on, where the arithmetic dominates (the
  LSTMs' zero and identity blocks make it some 1.1x a GRU's), one FULLY_CONNECTED of [x, h]
  gives r's and z's sums, x W_in + b_in and h W_hn + b_hn, then
  n = tanh(x W_in + b_in + r (h W_hn + b_hn)) and h' = n + z (h - n): eleven operations.

A layer of T steps thus takes T operations (GRU: 3 T or 11 T) plus a few to split and join;
an LSTM, RNN or small GRU of one time step (a streaming model feeding its states back) needs
only feature level 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ...nnapi.codes import FuseCode
from ...nnapi.codes import OperationType as Op
from ..builder.arithmetic import arithmetic
from ..builder.common import require_tensor, static_int
from ..builder.context import Arg, Converter
from ..builder.slicing import concatenate, split_sizes
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering

State = tuple[TensorValue, ...]  # (h,) or, for an LSTM, (h, c): each [batch, size]
Cell = Callable[[TensorValue, State], State]

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
_LSTM_TANH, _LSTM_NONE = 4, 0  # the LSTM operation's activation codes for tanh and none
# A gate bias whose sigmoid is exactly 1 (and of its negation exactly 0) in float32 and float16.
_SATURATED = 1e4
# Up to this many units a GRU step's time goes to dispatching its operations, and the
# two-LSTM form (3 of them) is faster; above, its arithmetic (some 1.1x a GRU's, with the
# LSTMs' zero and identity blocks) outweighs that, and the element-wise form's one
# FULLY_CONNECTED is (on the host runtime the two break even near 40 units).
_GRU_BY_LSTM_MAX_UNITS = 32
_LSTM_GATES = ("input", "forget", "cell", "output")  # PyTorch's order of the stacked gates


@dataclass(frozen=True)
class CellWeights:
    """One layer's weights in one direction, as PyTorch stores them (gates stacked)."""

    w_ih: np.ndarray  # [gates * hidden, input]
    w_hh: np.ndarray  # [gates * hidden, output]
    b_ih: np.ndarray  # [gates * hidden] (zeros for a layer without biases)
    b_hh: np.ndarray
    w_hr: np.ndarray | None = None  # an LSTM's projection [output, hidden]

    @property
    def output_size(self) -> int:
        return int(self.w_hh.shape[1])


def _array(t: Arg, what: str) -> np.ndarray:
    if not isinstance(t, torch.Tensor):
        raise Unsupported(f"{what} computed by the model (only constant weights)")
    return t.detach().float().contiguous().numpy()


def _cell_weights(w_ih: Arg, w_hh: Arg, b_ih: Arg, b_hh: Arg, w_hr: Arg = None) -> CellWeights:
    wi, wh = _array(w_ih, "weights"), _array(w_hh, "weights")
    zeros = np.zeros(wi.shape[0], np.float32)
    bi = zeros if b_ih is None else _array(b_ih, "biases")
    bh = zeros if b_hh is None else _array(b_hh, "biases")
    return CellWeights(wi, wh, bi, bh, None if w_hr is None else _array(w_hr, "weights"))


def _layer_weights(params: Sequence[Arg], has_biases: bool, cells: int) -> list[CellWeights]:
    """The flat parameter list of aten::lstm & co. (per layer and direction: w_ih, w_hh,
    then b_ih, b_hh with biases, then an LSTM's projection) cut into ``cells`` cells."""
    per_cell = 4 if has_biases else 2
    if len(params) == cells * (per_cell + 1):
        per_cell += 1  # projected LSTM (proj_size > 0)
    elif len(params) != cells * per_cell:
        raise Unsupported(f"{len(params)} parameters do not make {cells} recurrent cells")
    result = []
    for k in range(cells):
        group = list(params[k * per_cell:(k + 1) * per_cell])
        w_ih, w_hh = group[:2]
        b_ih, b_hh = group[2:4] if has_biases else (None, None)
        w_hr = group[-1] if per_cell in (3, 5) else None
        result.append(_cell_weights(w_ih, w_hh, b_ih, b_hh, w_hr))
    return result


# --------------------------------------------------------------------------------------------
# Cells: built once per layer and direction (their constants shared by every step)


def _float(cx: Converter, array: np.ndarray) -> TensorValue:
    return cx.constant(np.ascontiguousarray(array, np.float32), "float32")


# A gate of NNAPI's LSTM: its input weights [cells, input], recurrent weights [cells, output]
# and bias [cells].
Gate = tuple[np.ndarray, np.ndarray, np.ndarray]
LstmStep = Callable[[TensorValue, TensorValue, TensorValue], tuple[TensorValue, TensorValue]]


def _lstm_operation(cx: Converter, gates: dict[str, Gate], activation: int,
                    projection: np.ndarray | None = None) -> LstmStep:
    """NNAPI's LSTM with these gates (``_LSTM_GATES``), built once: step(x, h, c) gives the
    output state and the cell state. It has no way to leave out peephole weights and a
    projection, so zero peephole weights and an identity projection stand for absent ones
    (both exact)."""
    hidden, _ = gates["input"][0].shape
    output_size = gates["input"][1].shape[1]
    weights: dict[str, TensorValue] = {}
    for gate in _LSTM_GATES:
        w_in, w_rec, bias = gates[gate]
        weights[f"input_to_{gate}_weights"] = _float(cx, w_in)
        weights[f"recurrent_to_{gate}_weights"] = _float(cx, w_rec)
        weights["cell_bias" if gate == "cell" else f"{gate}_gate_bias"] = _float(cx, bias)
    no_peephole = _float(cx, np.zeros(hidden, np.float32))
    for gate in ("input", "forget", "output"):
        weights[f"cell_to_{gate}_weights"] = no_peephole
    weights["projection_weights"] = _float(
        cx, projection if projection is not None else np.eye(hidden, dtype=np.float32))
    weights["projection_bias"] = _float(cx, np.zeros(output_size, np.float32))

    def step(x: TensorValue, h: TensorValue, c: TensorValue) -> tuple[TensorValue, TensorValue]:
        batch = x.shape[0]
        outputs = {name: cx.new_tensor(shape, "float32") for name, shape in (
            ("scratch_buffer", (batch, 4 * hidden)), ("output_state_out", (batch, output_size)),
            ("cell_state_out", (batch, hidden)), ("output", (batch, output_size)))}
        cx.operation(Op.LSTM, dict(input=x, **weights, output_state_in=h, cell_state_in=c,
                                   activation=cx.i32(activation), cell_clip=cx.f32(0.0),
                                   proj_clip=cx.f32(0.0)), outputs)
        return outputs["output_state_out"], outputs["cell_state_out"]

    return step


def _lstm_cell(cx: Converter, w: CellWeights) -> Cell:
    w_ih, w_hh, bias = (np.split(a, 4) for a in (w.w_ih, w.w_hh, w.b_ih + w.b_hh))
    lstm = _lstm_operation(cx, {gate: (w_ih[k], w_hh[k], bias[k])
                                for k, gate in enumerate(_LSTM_GATES)}, _LSTM_TANH, w.w_hr)

    def step(x: TensorValue, state: State) -> State:
        return lstm(x, *state)

    return step


def _rnn_cell(cx: Converter, w: CellWeights, relu: bool) -> Cell:
    weights = dict(weights=_float(cx, w.w_ih), recurrent_weights=_float(cx, w.w_hh),
                   bias=_float(cx, w.b_ih + w.b_hh))
    fuse = FuseCode.RELU if relu else FuseCode.NONE

    def step(x: TensorValue, state: State) -> State:
        (h,) = state
        shape = (x.shape[0], w.w_hh.shape[0])
        outputs = dict(hidden_state_out=cx.new_tensor(shape, "float32"),
                       output=cx.new_tensor(shape, "float32"))
        cx.operation(Op.RNN, dict(input=x, **weights, hidden_state_in=h,
                                  fuse_code=cx.i32(int(fuse))), outputs)
        new = outputs["hidden_state_out"]
        return (new if relu else cx.emit_like(Op.TANH, dict(input=new), new),)

    return step


def _gru_by_lstm(cx: Converter, w: CellWeights) -> Cell:
    """A GRU step as two NNAPI LSTM steps (see the module docstring): the first gives
    m = r (h W_hn + b_hn), the second h' = z h + (1 - z) tanh(x W_in + b_in + m) as its cell
    state."""
    hidden = w.w_hh.shape[0] // 3
    inputs = w.w_ih.shape[1]
    (w_ir, w_iz, w_in), (w_hr, w_hz, w_hn) = np.split(w.w_ih, 3), np.split(w.w_hh, 3)
    (b_ir, b_iz, b_in), (b_hr, b_hz, b_hn) = np.split(w.b_ih, 3), np.split(w.b_hh, 3)
    zero_x, zero_h = np.zeros((hidden, inputs), np.float32), np.zeros((hidden, hidden), np.float32)
    saturated = np.full(hidden, _SATURATED, np.float32)
    # First step, no activation: input gate 1, forget gate 0, so the cell state is h W_hn + b_hn;
    # the output gate is r.
    reset = _lstm_operation(cx, {
        "input": (zero_x, zero_h, saturated), "forget": (zero_x, zero_h, -saturated),
        "cell": (zero_x, w_hn, b_hn), "output": (w_ir, w_hr, b_ir + b_hr)}, _LSTM_NONE)
    # Second step, on [x, m]: forget gate z on the cell state h, input gate sigmoid(-z's sum)
    # = 1 - z, candidate tanh(x W_in + m + b_in); the output gate is unused.
    w_z = np.concatenate([w_iz, zero_h], axis=1)
    update = _lstm_operation(cx, {
        "input": (-w_z, -w_hz, -(b_iz + b_hz)), "forget": (w_z, w_hz, b_iz + b_hz),
        "cell": (np.concatenate([w_in, np.eye(hidden, dtype=np.float32)], axis=1), zero_h, b_in),
        "output": (np.zeros((hidden, inputs + hidden), np.float32), zero_h,
                   np.zeros(hidden, np.float32))}, _LSTM_TANH)

    def step(x: TensorValue, state: State) -> State:
        (h,) = state
        m, _ = reset(x, h, h)
        _, new = update(concatenate(cx, [x, m], 1), h, h)
        return (new,)

    return step


def _gru_elementwise(cx: Converter, w: CellWeights) -> Cell:
    """A GRU step as eleven operations: one FULLY_CONNECTED of [x, h], then the gates."""
    hidden = w.w_hh.shape[0] // 3
    inputs = w.w_ih.shape[1]
    # One product of [x, h] gives r's and z's sums, x W_in + b_in and h W_hn + b_hn.
    matrix = np.zeros((4 * hidden, inputs + hidden), np.float32)
    matrix[:2 * hidden, :inputs] = w.w_ih[:2 * hidden]
    matrix[:2 * hidden, inputs:] = w.w_hh[:2 * hidden]
    matrix[2 * hidden:3 * hidden, :inputs] = w.w_ih[2 * hidden:]
    matrix[3 * hidden:, inputs:] = w.w_hh[2 * hidden:]
    bias = np.concatenate([w.b_ih[:2 * hidden] + w.b_hh[:2 * hidden], w.b_ih[2 * hidden:],
                           w.b_hh[2 * hidden:]])
    weights, biases = _float(cx, matrix), _float(cx, bias)

    def step(x: TensorValue, state: State) -> State:
        (h,) = state
        joined = concatenate(cx, [x, h], 1)
        sums = cx.emit(Op.FULLY_CONNECTED, dict(input=joined, weights=weights, bias=biases,
                                                fuse_code=cx.i32(0)),
                       (x.shape[0], 4 * hidden), "float32")
        r_sum, z_sum, x_part, h_part = split_sizes(cx, sums, 1, [hidden] * 4)
        r = cx.emit_like(Op.LOGISTIC, dict(input=r_sum), r_sum)
        z = cx.emit_like(Op.LOGISTIC, dict(input=z_sum), z_sum)
        candidate = arithmetic(cx, Op.ADD, x_part, arithmetic(cx, Op.MUL, r, h_part))
        n = cx.emit_like(Op.TANH, dict(input=candidate), candidate)
        update = arithmetic(cx, Op.MUL, z, arithmetic(cx, Op.SUB, h, n))
        return (arithmetic(cx, Op.ADD, n, update),)

    return step


def _cell(cx: Converter, mode: str, w: CellWeights) -> Cell:
    if mode == "lstm":
        return _lstm_cell(cx, w)
    if mode == "gru":
        small = w.w_hh.shape[1] <= _GRU_BY_LSTM_MAX_UNITS
        return _gru_by_lstm(cx, w) if small else _gru_elementwise(cx, w)
    return _rnn_cell(cx, w, relu=mode == "rnn_relu")


# --------------------------------------------------------------------------------------------
# Layers


@dataclass(frozen=True)
class LayerStack:
    """How many layers and directions, and whether the batch comes first."""

    num_layers: int
    directions: int
    batch_first: bool

    @property
    def time_dim(self) -> int:
        return 1 if self.batch_first else 0


def _float_input(x: Arg, what: str = "input") -> TensorValue:
    x = require_tensor(x, what)
    if x.dtype != "float32":
        raise Unsupported(f"recurrent layers on {x.dtype} tensors (float32 only)")
    return x


def _steps(cx: Converter, x: TensorValue, time_dim: int) -> list[TensorValue]:
    """The time steps of a [batch, time, features] or [time, batch, features] sequence, each
    [batch, features]: one RESHAPE that puts each step's values in a block, one SPLIT."""
    steps = static_int(x.shape[time_dim], "the number of time steps")
    batch, features = x.shape[1 - time_dim], x.shape[2]
    if steps == 1:
        return [cx.reshape(x, (batch, features))]
    if time_dim == 1:
        return split_sizes(cx, cx.reshape(x, (batch, steps * features)), 1, [features] * steps)
    return split_sizes(cx, cx.reshape(x, (steps * batch, features)), 0, [batch] * steps)


def _joined_output(cx: Converter, outputs: list[list[TensorValue]], batch_first: bool) \
        -> TensorValue:
    """The layer's output sequence from each direction's step outputs [batch, size]."""
    steps, batch = len(outputs[0]), outputs[0][0].shape[0]
    size = sum(o[0].shape[1] for o in outputs)
    if batch_first:  # [batch, time * size] in step order is [batch, time, size]
        pieces = [o[t] for t in range(steps) for o in outputs]
        return cx.reshape(concatenate(cx, pieces, 1), (batch, steps, size))
    by_direction = [concatenate(cx, o, 0) for o in outputs]
    return cx.reshape(concatenate(cx, by_direction, 1), (steps, batch, size))


def _initial_states(cx: Converter, state: Arg, cells: int) -> list[TensorValue]:
    """An initial state [cells, batch, size] cut into one [batch, size] per cell."""
    if isinstance(state, torch.Tensor):
        array = state.detach().float().numpy()
        return [_float(cx, array[k]) for k in range(cells)]
    state = _float_input(state, "initial state")
    if state.rank != 3 or state.shape[0] != cells:
        raise Unsupported(f"an initial state of shape {list(state.shape)} for {cells} cells")
    batch, size = state.shape[1:]
    if cells == 1:
        return [cx.reshape(state, (batch, size))]
    return split_sizes(cx, cx.reshape(state, (cells * batch, size)), 0, [batch] * cells)


def _stacked(cx: Converter, finals: list[TensorValue]) -> TensorValue:
    """Final states [batch, size] of every cell as PyTorch returns them: [cells, batch, size]."""
    batch, size = finals[0].shape
    return cx.reshape(concatenate(cx, finals, 0), (len(finals), batch, size))


def _used(cx: Converter, output: int) -> bool:
    return bool(cx.node is None or cx.users.get(cx.node.outputs[output]))


def run_layers(cx: Converter, mode: str, x: Arg, states: Sequence[Arg],
               weights: Sequence[CellWeights], stack: LayerStack
               ) -> tuple[TensorValue | None, ...]:
    """The output sequence and the final states (each None where nothing reads it) of a
    stack of recurrent layers, unrolled over time."""
    x = _float_input(x)
    if x.rank != 3:
        raise Unsupported(f"a recurrent layer on a {x.rank}-D input (3-D only)")
    cells = stack.num_layers * stack.directions
    initial = [_initial_states(cx, s, cells) for s in states]
    inputs = _steps(cx, x, stack.time_dim)
    steps = len(inputs)
    finals: list[list[TensorValue]] = [[] for _ in states]
    outputs: list[list[TensorValue]] = []
    for layer in range(stack.num_layers):
        outputs = []
        for direction in range(stack.directions):
            k = layer * stack.directions + direction
            cell = _cell(cx, mode, weights[k])
            state = tuple(init[k] for init in initial)
            step_outputs: dict[int, TensorValue] = {}
            for t in (range(steps) if direction == 0 else range(steps - 1, -1, -1)):
                state = cell(inputs[t], state)
                step_outputs[t] = state[0]
            for kept, s in zip(finals, state, strict=False):
                kept.append(s)
            outputs.append([step_outputs[t] for t in range(steps)])
        if layer + 1 < stack.num_layers:
            inputs = [concatenate(cx, [o[t] for o in outputs], 1) for t in range(steps)] \
                if stack.directions == 2 else outputs[0]
    sequence = _joined_output(cx, outputs, stack.batch_first) if _used(cx, 0) else None
    return (sequence, *(_stacked(cx, f) if _used(cx, 1 + i) else None
                        for i, f in enumerate(finals)))


def _recurrent(cx: Converter, mode: str, x: Arg, states: Sequence[Arg], params: Sequence[Arg],
               has_biases: bool, num_layers: int, dropout: float, train: bool,
               bidirectional: bool, batch_first: bool) -> tuple[TensorValue | None, ...]:
    if "batch_sizes" in getattr(cx.node, "schema", ""):
        raise Unsupported("packed sequences (pack_padded_sequence)")
    if static_int(train, "train"):
        raise Unsupported("a recurrent layer in training mode")
    directions = 2 if static_int(bidirectional, "bidirectional") else 1
    stack = LayerStack(static_int(num_layers, "num_layers"), directions,
                       bool(static_int(batch_first, "batch_first")))
    weights = _layer_weights(list(params), bool(static_int(has_biases, "has_biases")),
                             stack.num_layers * stack.directions)
    return run_layers(cx, mode, x, states, weights, stack)


_LAYER_NOTES = ("unrolled over time (static length): {} per step; batch-first or not, stacked,"
                " bidirectional, initial and final states")


@lowering("aten::lstm", nnapi=("LSTM", "SPLIT", "CONCATENATION", "RESHAPE"),
          notes=_LAYER_NOTES.format("one operation (LSTM, whose state outputs give h_n and c_n)")
          + "; proj_size")
def lstm(cx: Converter, x: Arg, hx: Arg, params: Sequence[Arg], has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool,
         batch_first: bool = False) -> tuple[TensorValue | None, ...]:
    if not isinstance(hx, (list, tuple)) or len(hx) != 2:
        raise Unsupported("packed sequences (pack_padded_sequence)")
    return _recurrent(cx, "lstm", x, hx, params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first)


@lowering("aten::gru", nnapi=("LSTM", "CONCATENATION", "FULLY_CONNECTED", "LOGISTIC", "TANH",
                              "MUL", "ADD", "SUB", "SPLIT", "RESHAPE"),
          notes=_LAYER_NOTES.format("no NNAPI GRU: up to 32 units three operations (two LSTM"
                                    " and a CONCATENATION), above eleven"))
def gru(cx: Converter, x: Arg, hx: Arg, params: Sequence[Arg], has_biases: bool,
        num_layers: int, dropout: float, train: bool, bidirectional: bool,
        batch_first: bool = False) -> tuple[TensorValue | None, ...]:
    return _recurrent(cx, "gru", x, [hx], params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first)


@lowering("aten::rnn_tanh", "aten::rnn_relu",
          nnapi=("RNN", "TANH", "SPLIT", "CONCATENATION", "RESHAPE"),
          notes=_LAYER_NOTES.format("one operation (RNN; with tanh, RNN then TANH)"))
def rnn(cx: Converter, x: Arg, hx: Arg, params: Sequence[Arg], has_biases: bool,
        num_layers: int, dropout: float, train: bool, bidirectional: bool,
        batch_first: bool = False) -> tuple[TensorValue | None, ...]:
    mode = "rnn_relu" if cx.current_node.kind == "aten::rnn_relu" else "rnn_tanh"
    return _recurrent(cx, mode, x, [hx], params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first)


# --------------------------------------------------------------------------------------------
# One-step cells (nn.LSTMCell, nn.GRUCell, nn.RNNCell)


def _one_step(cx: Converter, mode: str, x: Arg, states: Sequence[Arg], w_ih: Arg, w_hh: Arg,
              b_ih: Arg, b_hh: Arg) -> State:
    x = _float_input(x)
    if x.rank != 2:
        raise Unsupported(f"a recurrent cell on a {x.rank}-D input (2-D only)")
    cell = _cell(cx, mode, _cell_weights(w_ih, w_hh, b_ih, b_hh))
    initial = []
    for s in states:
        if isinstance(s, torch.Tensor):
            initial.append(_float(cx, s.detach().float().numpy()))
        else:
            initial.append(_float_input(s, "state"))
    return cell(x, tuple(initial))


@lowering("aten::lstm_cell", nnapi=("LSTM",))
def lstm_cell(cx: Converter, x: Arg, hx: Sequence[Arg], w_ih: Arg, w_hh: Arg, b_ih: Arg = None,
              b_hh: Arg = None) -> State:
    return _one_step(cx, "lstm", x, list(hx), w_ih, w_hh, b_ih, b_hh)


@lowering("aten::gru_cell", nnapi=("LSTM", "CONCATENATION", "FULLY_CONNECTED", "SPLIT",
                                   "LOGISTIC", "TANH", "MUL", "ADD", "SUB"),
          notes="up to 32 units two LSTM and a CONCATENATION, above eleven operations")
def gru_cell(cx: Converter, x: Arg, hx: Arg, w_ih: Arg, w_hh: Arg, b_ih: Arg = None,
             b_hh: Arg = None) -> TensorValue:
    return _one_step(cx, "gru", x, [hx], w_ih, w_hh, b_ih, b_hh)[0]


@lowering("aten::rnn_tanh_cell", "aten::rnn_relu_cell", nnapi=("RNN", "TANH"))
def rnn_cell(cx: Converter, x: Arg, hx: Arg, w_ih: Arg, w_hh: Arg, b_ih: Arg = None,
             b_hh: Arg = None) -> TensorValue:
    mode = "rnn_relu" if cx.current_node.kind == "aten::rnn_relu_cell" else "rnn_tanh"
    return _one_step(cx, mode, x, [hx], w_ih, w_hh, b_ih, b_hh)[0]
