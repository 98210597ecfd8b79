"""Reusable quantization-parameter rules for signature declarations."""

from __future__ import annotations

from ..codes import OperandType
from ._dsl import LevelRule, Rule, RuleContext, level_rule, rule

_Q8 = OperandType.TENSOR_QUANT8_ASYMM
# The asymmetric 8-bit types: unsigned since the first release, signed since API 30.
ASYMM_8BIT = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


def bias_scale(bias: str = "bias", input: str = "input", filter: str = "filter") -> Rule:
    """A quantized bias must have zero point 0 and scale input.scale * filter.scale."""

    @rule(f"{bias}.scale == {input}.scale * {filter}.scale, {bias}.zeroPoint == 0")
    def check(ctx: RuleContext) -> str | None:
        b, x, w = ctx.input(bias), ctx.input(input), ctx.input(filter)
        if b is None or b.type != OperandType.TENSOR_INT32:
            return None
        if b.zero_point != 0:
            return f"{bias} zero point must be 0, got {b.zero_point}"
        if w.type not in ASYMM_8BIT:
            return None
        product = x.scale * w.scale
        if abs(product - b.scale) > 1e-6 * min(product, b.scale):
            return (f"{bias} scale must equal {input}.scale * {filter}.scale = {product:g},"
                    f" got {b.scale:g}")
        return None

    return check


def per_channel_dim(name: str, channel_dim: int) -> Rule:
    """A per-channel quantized operand must be quantized along ``channel_dim``."""

    @rule(f"{name} per-channel quantized along dimension {channel_dim}")
    def check(ctx: RuleContext) -> str | None:
        op = ctx.input(name)
        if op is None or op.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return None
        if op.channel_quant is None:
            return f"{name} is per-channel quantized but has no channel quantization parameters"
        if op.channel_quant.channel_dim != channel_dim:
            return (f"{name} must be quantized along dimension {channel_dim},"
                    f" got {op.channel_quant.channel_dim}")
        return None

    return check


def fixed_output_quant(scale: float, zero_point: int, output: str = "output",
                       operand_type: OperandType = _Q8) -> Rule:
    """Outputs of some quantized operations have a fixed scale and zero point."""

    @rule(f"{operand_type.name} {output} has scale {scale:g} and zero point {zero_point}")
    def check(ctx: RuleContext) -> str | None:
        out = ctx.output(output)
        if out is None or out.type != operand_type:
            return None
        if out.scale != scale or out.zero_point != zero_point:
            return (f"{output} must have scale {scale:g} and zero point {zero_point},"
                    f" got scale {out.scale:g} and zero point {out.zero_point}")
        return None

    return check


def same_quant(output: str = "output", input: str = "input") -> Rule:
    """The output keeps the input's scale and zero point (data-movement operations)."""

    @rule(f"quantized {output} has the scale and zero point of {input}")
    def check(ctx: RuleContext) -> str | None:
        x, out = ctx.input(input), ctx.output(output)
        if x is None or out is None or x.type not in (*ASYMM_8BIT,
                                                       OperandType.TENSOR_QUANT16_ASYMM):
            return None
        if (x.scale, x.zero_point) != (out.scale, out.zero_point):
            return (f"{output} must have the scale and zero point of {input}"
                    f" ({x.scale:g}, {x.zero_point}), got ({out.scale:g}, {out.zero_point})")
        return None

    return check


def ranks_before_level_3(ranks: tuple[int, ...], input: str = "input") -> LevelRule:
    """Operations that accepted only some ranks before API 29 need level 3 for the others."""

    @level_rule(f"{input} of rank other than {ranks} needs feature level 3")
    def needs(ctx: RuleContext) -> int | None:
        x = ctx.input(input)
        if x is None or not x.dimensions:  # rank unknown: nothing to require
            return None
        return None if len(x.dimensions) in ranks else 3

    return needs
