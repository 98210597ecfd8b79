"""Recurrent and sequence operations: LSTM, RNN, SVDF and their sequence forms, and the
quantized LSTM cells.

The LSTM weight list (17 operands, several optional) recurs in LSTM,
UNIDIRECTIONAL_SEQUENCE_LSTM and, twice, in BIDIRECTIONAL_SEQUENCE_LSTM, so it is written once
here with a name prefix. Which optional operands are present (CIFG, peephole, projection,
layer normalization) is checked by the kernels, since it depends on which have values.
Since API 30 the sequence operations may also output their final states; the bidirectional
ones have a "separate" form (forward and backward outputs) and a "merged" one (one output,
forward and backward concatenated, as merge_outputs says).
"""

from __future__ import annotations

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import Rule, RuleContext, combo, form, rule
from ._registry import define
from ._rules import fixed_output_quant

_FLOATS = [combo(1, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")]
_FLOATS_SINCE_3 = [combo(3, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")]


def _lstm_weights(p: str = "") -> str:
    """The 17 weight and bias operands of one LSTM cell, names prefixed with ``p``."""
    return (f"{p}input_to_input_weights:T? {p}input_to_forget_weights:T"
            f" {p}input_to_cell_weights:T {p}input_to_output_weights:T"
            f" {p}recurrent_to_input_weights:T? {p}recurrent_to_forget_weights:T"
            f" {p}recurrent_to_cell_weights:T {p}recurrent_to_output_weights:T"
            f" {p}cell_to_input_weights:T? {p}cell_to_forget_weights:T?"
            f" {p}cell_to_output_weights:T? {p}input_gate_bias:T? {p}forget_gate_bias:T"
            f" {p}cell_bias:T {p}output_gate_bias:T {p}projection_weights:T?"
            f" {p}projection_bias:T?")


def _layer_norm_weights(p: str = "") -> str:
    return (f"{p}input_layer_norm_weights:T? {p}forget_layer_norm_weights:T?"
            f" {p}cell_layer_norm_weights:T? {p}output_layer_norm_weights:T?")


_CELL_PARAMS = "activation:i32 cell_clip:S proj_clip:S"

define(Op.LSTM, summary="one LSTM time step (CIFG, peephole, projection, layer normalization)",
       forms=[form("", f"input:T {_lstm_weights()} output_state_in:T cell_state_in:T"
                       f" {_CELL_PARAMS} [@3 {_layer_norm_weights()}]",
                   "scratch_buffer:T output_state_out:T cell_state_out:T output:T")],
       types=_FLOATS)

define(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, summary="an LSTM cell unrolled over a sequence",
       forms=[form("", f"input:T {_lstm_weights()} output_state_in:T cell_state_in:T"
                       f" {_CELL_PARAMS} time_major:bool {_layer_norm_weights()}",
                   "output:T [@4 output_state_out:T cell_state_out:T]")],
       types=_FLOATS_SINCE_3)

_BIDI_LSTM_INPUTS = (
    f"input:T {_lstm_weights('fw_')} {_lstm_weights('bw_')}"
    " fw_activation_state:T fw_cell_state:T bw_activation_state:T bw_cell_state:T aux_input:T?"
    " fw_aux_input_to_input_weights:T? fw_aux_input_to_forget_weights:T?"
    " fw_aux_input_to_cell_weights:T? fw_aux_input_to_output_weights:T?"
    " bw_aux_input_to_input_weights:T? bw_aux_input_to_forget_weights:T?"
    " bw_aux_input_to_cell_weights:T? bw_aux_input_to_output_weights:T?"
    f" {_CELL_PARAMS} merge_outputs:bool time_major:bool"
    f" {_layer_norm_weights('fw_')} {_layer_norm_weights('bw_')}")
_BIDI_LSTM_STATES = ("[@4 fw_output_state_out:T fw_cell_state_out:T bw_output_state_out:T"
                     " bw_cell_state_out:T]")

define(Op.BIDIRECTIONAL_SEQUENCE_LSTM,
       summary="forward and backward LSTM cells over a sequence, optionally merged",
       forms=[form("separate", _BIDI_LSTM_INPUTS, f"fw_output:T bw_output:T {_BIDI_LSTM_STATES}"),
              form("merged", _BIDI_LSTM_INPUTS, f"fw_output:T {_BIDI_LSTM_STATES}")],
       types=_FLOATS_SINCE_3)

define(Op.RNN, summary="one basic RNN time step",
       forms=[form("", "input:T weights:T recurrent_weights:T bias:T hidden_state_in:T"
                       " fuse_code:i32", "hidden_state_out:T output:T")],
       types=_FLOATS)

define(Op.UNIDIRECTIONAL_SEQUENCE_RNN, summary="a basic RNN cell unrolled over a sequence",
       forms=[form("", "input:T weights:T recurrent_weights:T bias:T hidden_state:T"
                       " fuse_code:i32 time_major:i32", "output:T [@4 hidden_state_out:T]")],
       types=_FLOATS_SINCE_3)

_BIDI_RNN_INPUTS = ("input:T fw_weights:T fw_recurrent_weights:T fw_bias:T fw_hidden_state:T"
                    " bw_weights:T bw_recurrent_weights:T bw_bias:T bw_hidden_state:T"
                    " aux_input:T? fw_aux_weights:T? bw_aux_weights:T? fuse_code:i32"
                    " time_major:bool merge_outputs:bool")
_BIDI_RNN_STATES = "[@4 fw_hidden_state_out:T bw_hidden_state_out:T]"

define(Op.BIDIRECTIONAL_SEQUENCE_RNN,
       summary="forward and backward RNN cells over a sequence, optionally merged",
       forms=[form("separate", _BIDI_RNN_INPUTS, f"fw_output:T bw_output:T {_BIDI_RNN_STATES}"),
              form("merged", _BIDI_RNN_INPUTS, f"fw_output:T {_BIDI_RNN_STATES}")],
       types=_FLOATS_SINCE_3)

define(Op.SVDF, summary="a singular-value-decomposition filter over a memory of past inputs",
       forms=[form("", "input:T weights_feature:T weights_time:T bias:T? state_in:T rank:i32"
                       " fuse_code:i32", "state_out:T output:T")],
       types=_FLOATS)


# --------------------------------------------------------------------------------------------
# QUANTIZED_16BIT_LSTM: fixed quantization of activations and state, shared weight parameters

_Q8 = OperandType.TENSOR_QUANT8_ASYMM
_ACTIVATION_SCALE, _ACTIVATION_ZERO_POINT = 1.0 / 128.0, 128
_CELL_STATE_SCALE = 2.0**-11  # 16-bit state with 4 integer bits
_QLSTM_WEIGHTS = [f"{source}_to_{gate}_weights" for source in ("input", "recurrent")
                  for gate in ("input", "forget", "cell", "output")]
_QLSTM_BIASES = [f"{gate}_gate_bias" for gate in ("input", "forget", "cell", "output")]


def _fixed_input_quant(name: str, scale: float, zero_point: int) -> Rule:
    @rule(f"{name} has scale {scale:g} and zero point {zero_point}")
    def check(ctx: RuleContext) -> str | None:
        x = ctx.input(name)
        if x is None or (x.scale, x.zero_point) == (scale, zero_point):
            return None
        return (f"{name} must have scale {scale:g} and zero point {zero_point}, got scale"
                f" {x.scale:g} and zero point {x.zero_point}")

    return check


@rule("all eight weights share one scale and zero point")
def _shared_weight_quant(ctx: RuleContext) -> str | None:
    first = ctx.input(_QLSTM_WEIGHTS[0])
    for name in _QLSTM_WEIGHTS[1:]:
        w = ctx.input(name)
        if (w.scale, w.zero_point) != (first.scale, first.zero_point):
            return (f"{name} must have the scale and zero point of {_QLSTM_WEIGHTS[0]}"
                    f" ({first.scale:g}, {first.zero_point}), got ({w.scale:g}, {w.zero_point})")
    return None


@rule("biases have scale weights.scale / 128 and zero point 0")
def _bias_quant(ctx: RuleContext) -> str | None:
    expected = ctx.input(_QLSTM_WEIGHTS[0]).scale / 128.0
    for name in _QLSTM_BIASES:
        b = ctx.input(name)
        if b.zero_point != 0:
            return f"{name} zero point must be 0, got {b.zero_point}"
        if abs(b.scale - expected) > 1e-6 * expected:
            return f"{name} scale must be weights scale / 128 = {expected:g}, got {b.scale:g}"
    return None


define(Op.QUANTIZED_16BIT_LSTM,
       summary="one LSTM time step on 8-bit activations with a 16-bit cell state",
       forms=[form("", "input:tensor_q8 "
                       + " ".join(f"{w}:tensor_q8" for w in _QLSTM_WEIGHTS) + " "
                       + " ".join(f"{b}:tensor_i32" for b in _QLSTM_BIASES)
                       + " prev_cell_state:tensor_q16s prev_output:tensor_q8",
                   "cell_state_out:tensor_q16s output:tensor_q8")],
       types=[combo(3)],
       rules=[_fixed_input_quant("input", _ACTIVATION_SCALE, _ACTIVATION_ZERO_POINT),
              _fixed_input_quant("prev_output", _ACTIVATION_SCALE, _ACTIVATION_ZERO_POINT),
              _fixed_input_quant("prev_cell_state", _CELL_STATE_SCALE, 0),
              _shared_weight_quant, _bias_quant,
              fixed_output_quant(_ACTIVATION_SCALE, _ACTIVATION_ZERO_POINT, "output"),
              fixed_output_quant(_CELL_STATE_SCALE, 0, "cell_state_out",
                                 OperandType.TENSOR_QUANT16_SYMM)])


# --------------------------------------------------------------------------------------------
# QUANTIZED_LSTM: signed 8-bit activations, 8-bit symmetric weights, 16-bit cell state, with
# the optional peephole, projection and layer normalization of LSTM

_QLSTM_CELL = ("input_to_input_weights:W? input_to_forget_weights:W input_to_cell_weights:W"
               " input_to_output_weights:W recurrent_to_input_weights:W?"
               " recurrent_to_forget_weights:W recurrent_to_cell_weights:W"
               " recurrent_to_output_weights:W cell_to_input_weights:C?"
               " cell_to_forget_weights:C? cell_to_output_weights:C? input_gate_bias:B?"
               " forget_gate_bias:B cell_bias:B output_gate_bias:B projection_weights:W?"
               " projection_bias:B?")

define(Op.QUANTIZED_LSTM,
       summary="one LSTM time step on signed 8-bit activations with a 16-bit cell state",
       forms=[form("", f"input:T {_QLSTM_CELL} output_state_in:T cell_state_in:C"
                       " input_layer_norm_weights:C? forget_layer_norm_weights:C?"
                       " cell_layer_norm_weights:C? output_layer_norm_weights:C?"
                       " cell_clip:f32 projection_clip:f32 input_intermediate_scale:f32"
                       " forget_intermediate_scale:f32 cell_intermediate_scale:f32"
                       " output_intermediate_scale:f32 hidden_state_zero_point:i32"
                       " hidden_state_scale:f32",
                   "output_state_out:T cell_state_out:C output:T")],
       types=[combo(4, T="tensor_q8_signed", W="tensor_q8s", C="tensor_q16s", B="tensor_i32")])
