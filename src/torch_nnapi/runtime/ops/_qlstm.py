"""QUANTIZED_LSTM's integer arithmetic (Android's QLSTM, TFLite's 8x8_16 LSTM cell).

Each gate is two integer matrix products (input and previous output, their zero points folded
into per-row biases), each rescaled to a 16-bit value of the gate's intermediate scale,
optionally a peephole term and a 16-bit layer normalization (which adds the gate bias), then
gemmlowp's 16-bit fixed-point sigmoid or tanh. The cell state is 16-bit with a power-of-two
scale 2**cell_shift; the hidden state is rescaled to int8 and optionally projected. The hidden
state's zero point is subtracted from it, not added, as Android's (and TFLite's) kernel does.

Android passes the output cell state buffer, not yet written, to the input and forget gates'
peepholes, and adds no gate bias without layer normalization; we use the previous cell state
and add the bias into the products' bias then, as TFLite does (the conformance vectors use
neither case).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...nnapi.errors import BadDataError
from .. import fixedpoint as fp
from ..context import KernelContext, Shape
from ..quant import multiply_by_quantized_multiplier, quantize_multiplier
from ._recurrent import LstmConfig, expect_shape, required_shape

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
_F32 = np.float32
_LAYER_NORM_OVERFLOW_GUARD = 1 << 20


def _clamp16(x: np.ndarray) -> np.ndarray:
    return cast("np.ndarray", np.clip(x, INT16_MIN, INT16_MAX))


def _wrap32(x: np.ndarray) -> np.ndarray:
    return fp.wrap(x, 32)


def _multiplier(real: float | np.floating[Any]) -> tuple[int, int]:
    """A float32 real multiplier as (int32 multiplier, shift), as QuantizeMultiplier."""
    return quantize_multiplier(float(_F32(real)))


@dataclass(frozen=True)
class QlstmShape:
    """The batch, the cell's sizes and optional parts (as a float LSTM cell's: no auxiliary
    input), and the cell state's scale, 2**cell_shift."""

    batch: int
    config: LstmConfig
    cell_shift: int


def _present(ctx: KernelContext, *names: str) -> list[bool]:
    return [ctx.has_input(name) for name in names]


def _all_or_none(ctx: KernelContext, names: list[str], what: str) -> bool:
    have = _present(ctx, *names)
    if any(have) and not all(have):
        raise BadDataError(f"{what}: {', '.join(ctx.describe_input(n) for n in names)} must all"
                           " have values or all be omitted")
    return all(have)


def qlstm_shape(ctx: KernelContext) -> QlstmShape:
    """The cell's sizes and which optional parts it has, after checking every shape."""
    batch, input_size = required_shape(ctx, "input", 2)
    num_units = required_shape(ctx, "input_to_output_weights", 2)[0]
    output_size = required_shape(ctx, "recurrent_to_output_weights", 2)[1]
    cifg = not _all_or_none(ctx, ["input_to_input_weights", "recurrent_to_input_weights",
                                  "input_gate_bias"], "CIFG (the input gate's parameters)")
    gates = ("forget", "cell", "output") if cifg else ("input", "forget", "cell", "output")
    for gate in gates:
        expect_shape(ctx, f"input_to_{gate}_weights", (num_units, input_size))
        expect_shape(ctx, f"recurrent_to_{gate}_weights", (num_units, output_size))
        expect_shape(ctx, _bias(gate), (num_units,))
    peephole_gates = ("forget", "output") if cifg else ("input", "forget", "output")
    if cifg and ctx.has_input("cell_to_input_weights"):
        raise BadDataError(f"{ctx.describe_input('cell_to_input_weights')} is given, but the"
                           " cell has no input gate (CIFG)")
    peephole = _all_or_none(ctx, [f"cell_to_{g}_weights" for g in peephole_gates], "peephole")
    if cifg and ctx.has_input("input_layer_norm_weights"):
        raise BadDataError(f"{ctx.describe_input('input_layer_norm_weights')} is given, but the"
                           " cell has no input gate (CIFG)")
    layer_norm = _all_or_none(ctx, [f"{g}_layer_norm_weights" for g in gates],
                              "layer normalization")
    for names, present in ((peephole_gates, peephole), (gates, layer_norm)):
        for gate in names if present else ():
            name = f"cell_to_{gate}_weights" if names is peephole_gates \
                else f"{gate}_layer_norm_weights"
            expect_shape(ctx, name, (num_units,))
    projection = ctx.has_input("projection_weights")
    if projection:
        expect_shape(ctx, "projection_weights", (output_size, num_units))
    elif output_size != num_units:
        raise BadDataError(f"without projection weights the output size ({output_size}) must"
                           f" equal the number of units ({num_units})")
    if ctx.has_input("projection_bias"):
        if not projection:
            raise BadDataError(f"{ctx.describe_input('projection_bias')} needs projection"
                               " weights")
        expect_shape(ctx, "projection_bias", (output_size,))
    expect_shape(ctx, "output_state_in", (batch, output_size))
    expect_shape(ctx, "cell_state_in", (batch, num_units))
    cell_scale = float(_F32(ctx.input_quant("cell_state_in")[0]))
    cell_shift = round(math.log2(cell_scale))
    if abs(math.log2(cell_scale) - cell_shift) >= 1e-3 or cell_shift > -9:
        raise BadDataError(f"{ctx.describe_input('cell_state_in')} scale {cell_scale:g} must be"
                           " a power of two of at most 2**-9")
    return QlstmShape(batch, LstmConfig(num_units, output_size, cifg, peephole, layer_norm,
                                        projection, aux=False), cell_shift)


def _bias(gate: str) -> str:
    return "cell_bias" if gate == "cell" else f"{gate}_gate_bias"


def prepare_qlstm(ctx: KernelContext) -> list[Shape]:
    shape = qlstm_shape(ctx)
    return [(shape.batch, shape.config.output_size), (shape.batch, shape.config.num_cells),
            (shape.batch, shape.config.output_size)]


def _product(ctx: KernelContext, values: np.ndarray, zero_point: int, weights_name: str,
             extra_bias: np.ndarray | None, scale: float | np.floating[Any]) -> np.ndarray:
    """(values - zero_point) @ weights' (+ extra_bias), rescaled by ``scale`` as the
    reference's MatrixBatchVectorMultiplyAccumulate does (the zero point folded into a row
    bias)."""
    weights = ctx.input(weights_name).astype(np.int64)
    acc = values.astype(np.int64) @ weights.T - zero_point * weights.sum(axis=1)
    if extra_bias is not None:
        acc = acc + extra_bias
    multiplier, shift = _multiplier(scale)
    return multiply_by_quantized_multiplier(_wrap32(acc), multiplier, shift)


def _layer_norm(gate: np.ndarray, weights: np.ndarray, bias: np.ndarray, weights_scale: float,
                variance_limit: int) -> np.ndarray:
    """ApplyLayerNorm: normalizes each batch row of a 16-bit gate, scales it by the 16-bit
    weights, adds the bias and rescales to 16 bits."""
    n = gate.shape[-1]
    values = gate.astype(np.int64)
    total = values.sum(axis=-1, keepdims=True)
    sum_sq = (values * values).sum(axis=-1, keepdims=True)
    mean = _truncating_divide(total * 1024, n)
    variance = sum_sq * (_LAYER_NORM_OVERFLOW_GUARD // n) - mean * mean
    variance = _truncating_divide(variance, _LAYER_NORM_OVERFLOW_GUARD)
    variance = np.where(variance < 1, variance_limit, variance)
    inv_sqrt, right_shift = fp.get_inv_sqrt_quantized_multiplier_exp(variance)
    shifted = _wrap32(1024 * values - mean)
    rescaled = np.empty_like(shifted)
    for row in range(shifted.shape[0]):
        rescaled[row] = multiply_by_quantized_multiplier(shifted[row], int(inv_sqrt[row, 0]),
                                                         -int(right_shift[row, 0]))
    scaled = _wrap32(rescaled * weights.astype(np.int64) + bias.astype(np.int64))
    rounded = _truncating_divide(np.where(scaled > 0, scaled + 512, scaled - 512), 1024)
    multiplier, shift = _multiplier(weights_scale)
    return _clamp16(multiply_by_quantized_multiplier(rounded, multiplier, shift + 12))


def _truncating_divide(x: np.ndarray, divisor: int) -> np.ndarray:
    """C++ integer division: rounds toward zero."""
    quotient = np.abs(x) // divisor
    return cast("np.ndarray", np.where(x < 0, -quotient, quotient))


def _peephole(ctx: KernelContext, gate: str, cell: np.ndarray, cell_shift: int,
              intermediate_scale: float | np.floating[Any]) -> np.ndarray:
    """The peephole term: cell_to_gate weights times the cell state, rescaled."""
    weights = ctx.input(f"cell_to_{gate}_weights").astype(np.int64)
    # 2**cell_shift is a double in the reference, so the product is too
    scale = 2.0**cell_shift * float(_F32(ctx.input_quant(f"cell_to_{gate}_weights")[0])) \
        / float(_F32(intermediate_scale))
    multiplier, shift = _multiplier(scale)
    return multiply_by_quantized_multiplier(weights * cell.astype(np.int64), multiplier, shift)


def _gate(ctx: KernelContext, shape: QlstmShape, gate: str, cell: np.ndarray) -> np.ndarray:
    """A gate's 16-bit pre-activation (3 integer bits)."""
    x_scale, x_zero = ctx.input_quant("input")
    h_scale, h_zero = ctx.input_quant("output_state_in")
    intermediate = _F32(ctx.scalar(f"{gate}_intermediate_scale"))
    bias = None if shape.config.layer_norm else ctx.input(_bias(gate)).astype(np.int64)
    w_scale = _F32(ctx.input_quant(f"input_to_{gate}_weights")[0])
    r_scale = _F32(ctx.input_quant(f"recurrent_to_{gate}_weights")[0])
    from_input = _clamp16(_product(ctx, ctx.input("input"), x_zero, f"input_to_{gate}_weights",
                                   bias, w_scale * _F32(x_scale) / intermediate))
    pre = _clamp16(_product(ctx, ctx.input("output_state_in"), h_zero,
                            f"recurrent_to_{gate}_weights", None,
                            r_scale * _F32(h_scale) / intermediate) + from_input)
    if shape.config.peephole and gate != "cell":
        pre = _clamp16(_peephole(ctx, gate, cell, shape.cell_shift, intermediate) + pre)
    if shape.config.layer_norm:
        name = f"{gate}_layer_norm_weights"
        weights_scale = float(_F32(ctx.input_quant(name)[0]))
        variance_limit = min(1, int(_F32(10000) * _F32(weights_scale)))
        pre = _layer_norm(pre, ctx.input(name), ctx.input(_bias(gate)), weights_scale,
                          variance_limit)
    return pre


def run_qlstm(ctx: KernelContext) -> list[np.ndarray]:
    shape = qlstm_shape(ctx)
    prev_cell = ctx.input("cell_state_in").astype(np.int64)
    forget = fp.logistic(_gate(ctx, shape, "forget", prev_cell), 3, 16)
    modulation = fp.tanh(_gate(ctx, shape, "cell", prev_cell), 3, 16)
    if shape.config.cifg:
        input_gate = INT16_MAX - forget
    else:
        input_gate = fp.logistic(_gate(ctx, shape, "input", prev_cell), 3, 16)
    kept = fp.rounding_divide_by_pot(forget * prev_cell, 15)
    added = fp.rounding_divide_by_pot(input_gate * modulation, 30 + shape.cell_shift)
    cell = _clamp16(kept + added)
    cell_clip = float(ctx.scalar("cell_clip"))
    if cell_clip > 0:
        limit = int(np.clip(_F32(cell_clip) / _F32(ctx.input_quant("cell_state_in")[0]),
                            INT16_MIN, INT16_MAX))
        if limit > 0:
            cell = np.clip(cell, -limit, limit)
    output_gate = fp.logistic(_gate(ctx, shape, "output", cell), 3, 16)
    hidden = _hidden(ctx, shape, output_gate, cell)
    output = _project(ctx, shape, hidden) if shape.config.projection else hidden
    return [output.astype(np.int8), cell.astype(np.int16), output.astype(np.int8)]


def _hidden(ctx: KernelContext, shape: QlstmShape, output_gate: np.ndarray,
            cell: np.ndarray) -> np.ndarray:
    """output_gate * tanh(cell), rescaled to int8 at the hidden state's scale."""
    tanh_cell = fp.tanh(cell, shape.cell_shift + 15, 16)
    hidden_scale = _F32(ctx.scalar("hidden_state_scale"))
    multiplier, shift = _multiplier(_F32(2.0**-15 / float(hidden_scale) * 2.0**-15))
    value = multiply_by_quantized_multiplier(output_gate * tanh_cell, multiplier, shift)
    return cast("np.ndarray",
                np.clip(value - int(ctx.scalar("hidden_state_zero_point")), -128, 127))


def _project(ctx: KernelContext, shape: QlstmShape, hidden: np.ndarray) -> np.ndarray:
    """The projection to the output size, at the output state's quantization."""
    weights = ctx.input("projection_weights").astype(np.int64)
    hidden_zero = int(ctx.scalar("hidden_state_zero_point"))
    bias = ctx.input("projection_bias").astype(np.int64) if ctx.has_input("projection_bias") \
        else np.zeros(shape.config.output_size, np.int64)
    acc = hidden.astype(np.int64) @ weights.T + bias + hidden_zero * weights.sum(axis=1)
    w_scale = _F32(ctx.input_quant("projection_weights")[0])
    out_scale, out_zero = ctx.input_quant("output_state_in")
    multiplier, shift = _multiplier(w_scale * _F32(ctx.scalar("hidden_state_scale"))
                                    / _F32(out_scale))
    output = np.clip(multiply_by_quantized_multiplier(_wrap32(acc), multiplier, shift)
                     + out_zero, -128, 127)
    clip = float(ctx.scalar("projection_clip"))
    if clip > 0:
        limit = int(np.clip(_F32(clip) / w_scale, -128, 127))
        if limit > 0:
            output = np.clip(output, -limit, limit)
    return cast("np.ndarray", output)
