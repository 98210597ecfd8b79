"""Control flow: IF and WHILE, which call other models (MODEL operands).

IF runs its then or else model on its inputs from the fourth on; WHILE runs its body model
while its condition model outputs true, feeding the body's outputs back in. The operands an
operation passes to a called model, and those it receives from it, must agree with the called
model's inputs and outputs: same type, scale, zero point and per-channel parameters, and
dimensions that do not contradict where both are specified.
"""

from __future__ import annotations

from typing import Sequence

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import Rule, RuleContext, combo, form, rule
from ._registry import define


def _contradiction(outer, inner) -> str | None:
    """How operand ``outer`` disagrees with ``inner`` ("... , but X has ..."), or None when
    they are compatible."""
    if outer.type != inner.type:
        return f"is {outer.type.name}, but {{}} is {inner.type.name}"
    if outer.dimensions and inner.dimensions:
        if len(outer.dimensions) != len(inner.dimensions) or any(
                a and b and a != b for a, b in zip(outer.dimensions, inner.dimensions)):
            return (f"has dimensions {list(outer.dimensions)}, but {{}} has"
                    f" {list(inner.dimensions)}")
    if (outer.scale, outer.zero_point) != (inner.scale, inner.zero_point):
        return (f"has scale {outer.scale:g} and zero point {outer.zero_point}, but {{}} has"
                f" {inner.scale:g} and {inner.zero_point}")
    if outer.channel_quant != inner.channel_quant:
        return "has per-channel quantization parameters unlike {}"
    return None


def _agree(outers: Sequence, outer_names: Sequence[str], inners: Sequence,
           inner_names: Sequence[str]) -> str | None:
    """The first of ``outers`` that disagrees with the operand of ``inners`` at the same
    position, each named by the matching entry of the name lists."""
    for outer, outer_name, inner, inner_name in zip(outers, outer_names, inners, inner_names):
        problem = _contradiction(outer, inner)
        if problem:
            return f"{outer_name} {problem.format(inner_name)}"
    return None


def _of(model_name: str, direction: str, count: int, start: int = 0) -> list[str]:
    return [f"{model_name}'s {direction} {k}" for k in range(start, start + count)]


def _called(ctx: RuleContext, name: str):
    """The model input ``name`` refers to."""
    return ctx.input(name).model


def _inputs_of(model) -> list:
    return [model.operands[i] for i in model.inputs]


def _outputs_of(model) -> list:
    return [model.operands[o] for o in model.outputs]


def _condition_problem(operand, what: str) -> str | None:
    """A condition is a TENSOR_BOOL8 of fully specified shape [1]."""
    if operand.type != OperandType.TENSOR_BOOL8 or tuple(operand.dimensions) != (1,):
        return f"{what} must be a TENSOR_BOOL8 of shape [1], got {operand.describe()}"
    return None


def _branch_agrees(name: str) -> Rule:
    @rule(f"the {name} takes the IF's inputs from the fourth on and gives its outputs")
    def check(ctx: RuleContext) -> str | None:
        branch = _called(ctx, name)
        passed, received = ctx.inputs("inputs"), ctx.outputs("outputs")
        inputs, outputs = _inputs_of(branch), _outputs_of(branch)
        if len(inputs) != len(passed) or len(outputs) != len(received):
            return (f"{name} has {len(inputs)} inputs and {len(outputs)} outputs; the IF"
                    f" passes {len(passed)} and receives {len(received)}")
        return (_agree(passed, ctx.describe("input", "inputs"), inputs,
                       _of(name, "input", len(inputs)))
                or _agree(received, ctx.describe("output", "outputs"), outputs,
                          _of(name, "output", len(outputs))))

    return check


@rule("the condition is a TENSOR_BOOL8 of shape [1]")
def _if_condition(ctx: RuleContext) -> str | None:
    return _condition_problem(ctx.input("condition"), "the condition")


define(Op.IF, summary="runs the then or else model on the inputs, as the condition says",
       forms=[form("", "condition:tensor_bool8 then_model:model else_model:model [inputs:any*]",
                   "outputs:any*")],
       types=[combo(4)],
       rules=[_if_condition, _branch_agrees("then_model"), _branch_agrees("else_model")])


@rule("the condition model takes the WHILE's inputs and gives one TENSOR_BOOL8 of shape [1]")
def _while_condition(ctx: RuleContext) -> str | None:
    condition = _called(ctx, "condition_model")
    passed, inputs = ctx.inputs("inputs"), _inputs_of(condition)
    if len(inputs) != len(passed) or len(condition.outputs) != 1:
        return (f"condition_model has {len(inputs)} inputs and {len(condition.outputs)}"
                f" outputs; the WHILE passes {len(passed)} and needs 1")
    return (_agree(passed, ctx.describe("input", "inputs"), inputs,
                   _of("condition_model", "input", len(inputs)))
            or _condition_problem(_outputs_of(condition)[0], "condition_model's output 0"))


@rule("the body takes the WHILE's inputs and gives its outputs, then its state")
def _while_body(ctx: RuleContext) -> str | None:
    """m = the WHILE's outputs (values carried and returned), k = the body's other outputs
    (state carried but not returned), n = the remaining inputs (read-only)."""
    body = _called(ctx, "body_model")
    passed, received = ctx.inputs("inputs"), ctx.outputs("outputs")
    inputs, outputs = _inputs_of(body), _outputs_of(body)
    if len(inputs) != len(passed) or not len(received) <= len(outputs) <= len(inputs):
        return (f"body_model has {len(inputs)} inputs and {len(outputs)} outputs; the"
                f" WHILE passes {len(passed)} inputs and returns {len(received)} outputs, so"
                f" the body needs {len(passed)} inputs and {len(received)} to"
                f" {len(passed)} outputs")
    carried = len(outputs)
    return (_agree(passed, ctx.describe("input", "inputs"), inputs,
                   _of("body_model", "input", len(inputs)))
            or _agree(received, ctx.describe("output", "outputs"), outputs,
                      _of("body_model", "output", len(outputs)))
            or _agree(outputs, _of("body_model", "output", carried), inputs,
                      _of("body_model", "input (which it feeds)", carried)))


define(Op.WHILE, summary="runs the body model while the condition model outputs true",
       forms=[form("", "condition_model:model body_model:model inputs:any*", "outputs:any*")],
       types=[combo(4)], rules=[_while_condition, _while_body])
