"""Control flow of an exported program: ``torch.cond`` and ``torch.while_loop`` as NNAPI IF
and WHILE (feature level 4), their graph modules lowered into models the operation refers to
(``builder/called.py``; the pipeline lowers them with the same lowerings as the caller).

IF takes a TENSOR_BOOL8 condition of shape [1], its two branch models and the tensors it
passes to both; the branches return the same number of tensors of the same types and shapes.
WHILE runs its condition model (one TENSOR_BOOL8 [1] output) and body model on the carried
tensors, then the read-only ones; the body returns the carried tensors' next values, which
keep their types and shapes. Constant arguments are folded into the called models; a carried
constant becomes a constant operand.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...nnapi.codes import OperationType as Op
from ..builder.called import (
    CalledModel,
    disagreement,
    lower_called,
    model_operand,
    one_element,
    passed_operand,
    results_of,
)
from ..builder.context import Arg, Converter
from ..builder.values import TensorValue
from ..errors import Unsupported
from . import lowering

_LEVEL = 4  # IF and WHILE: Android 11


@lowering("higher_order::cond", nnapi=("IF",),
          notes="torch.cond in an exported program (the ExecuTorch path); both branches"
          " convert, feature level 4")
def cond(cx: Converter, pred: Arg, true_branch: Arg, false_branch: Arg,
         operands: Arg) -> Arg:
    _check_level(cx, "torch.cond", "IF")
    if not isinstance(pred, TensorValue):
        raise Unsupported("its condition is known at conversion time (a constant)")
    if not _one_bool(pred):
        raise Unsupported(f"its condition is a {pred.dtype} tensor of shape"
                          f" {list(pred.shape)}; IF takes one bool")
    args = _arguments(operands, "operands")
    then_model = lower_called(cx, true_branch, args, "the true branch")
    else_model = lower_called(cx, false_branch, args, "the false branch")
    problem = disagreement(then_model, else_model, ("the true branch", "the false branch"))
    if problem:
        raise Unsupported(f"IF's branches must agree: {problem}")
    written, returned = results_of(cx, then_model)
    cx.operation(Op.IF, dict(condition=one_element(cx, pred),
                             then_model=model_operand(cx, then_model),
                             else_model=model_operand(cx, else_model),
                             inputs=_passed(cx, args)), dict(outputs=written))
    return _node_result(returned)


_WHILE_NOTES = ("torch.while_loop in an exported program (the ExecuTorch path); carried"
                " tensors keep their shapes, feature level 4")


@lowering("higher_order::while_loop", nnapi=("WHILE",), notes=_WHILE_NOTES)
def while_loop(cx: Converter, condition: Arg, body: Arg, carried: Arg, additional: Arg) -> Arg:
    _check_level(cx, "torch.while_loop", "WHILE")
    state: list[TensorValue] = []
    for a in _arguments(carried, "carried_inputs"):
        if isinstance(a, torch.Tensor):
            a = cx.torch_constant(a)
        if not isinstance(a, TensorValue):
            raise Unsupported("it carries a number, not a tensor; WHILE carries tensors")
        state.append(a)
    args = [*state, *_arguments(additional, "additional_inputs")]
    condition_model = lower_called(cx, condition, args, "the condition")
    if len(condition_model.results) != 1 or not _one_bool(condition_model.results[0]):
        raise Unsupported("its condition must return one bool")
    body_model = lower_called(cx, body, args, "the body")
    _check_carried(state, body_model)
    written, returned = results_of(cx, body_model)
    cx.operation(Op.WHILE, dict(condition_model=model_operand(cx, condition_model),
                                body_model=model_operand(cx, body_model),
                                inputs=_passed(cx, args)), dict(outputs=written))
    return _node_result(returned)


def _one_bool(t: TensorValue) -> bool:
    """Whether ``t`` is one bool (0-D, or of one element), as IF and WHILE decide on."""
    return t.dtype == "bool" and all(d == 1 for d in t.shape)


def _node_result(returned: list[Arg]) -> Arg:
    """What the node returns: its one result, or a tuple of them (the driver's convention)."""
    return returned[0] if len(returned) == 1 else tuple(returned)


def _check_level(cx: Converter, what: str, operation: str) -> None:
    if cx.target_level is not None and cx.target_level < _LEVEL:
        raise Unsupported(f"{what} becomes NNAPI {operation}, feature level {_LEVEL}, above"
                          f" the target level {cx.target_level}")


def _arguments(values: Arg, name: str) -> list[Arg]:
    if values is None:
        return []
    if not isinstance(values, (list, tuple)):
        raise Unsupported(f"its {name} are a {type(values).__name__}, not a list")
    return list(values)


def _passed(cx: Converter, args: Sequence[Arg]) -> list[TensorValue]:
    """The operands the operation passes: the tensors among ``args`` (constants and numbers
    are folded into the called models)."""
    return [passed_operand(cx, a) for a in args if isinstance(a, TensorValue)]


def _check_carried(state: Sequence[TensorValue], body: CalledModel) -> None:
    if len(body.results) != len(state):
        raise Unsupported(f"its body returns {len(body.results)} tensors for"
                          f" {len(state)} carried ones")
    for i, (before, after, rank) in enumerate(zip(state, body.results, body.ranks,
                                                  strict=True)):
        shape = tuple(after.shape) if rank else ()
        if (before.nnapi_type, tuple(before.shape), before.scale, before.zero_point) != \
                (after.nnapi_type, shape, after.scale, after.zero_point):
            raise Unsupported(f"its body changes carried tensor {i} from a {before.dtype}"
                              f" of shape {list(before.shape)} to a {after.dtype} of shape"
                              f" {list(shape)}; WHILE keeps types and shapes")
