"""Models an IF or WHILE operation calls (MODEL operands): what a lowering gets back when it
has a graph module of its node (``torch.cond``'s branches, ``torch.while_loop``'s condition
and body) lowered into a model of its own.

The lowering itself is the pipeline's (``pipeline/called.py``: the same lowerer and
lowerings as the calling graph); the lowerings and this builder sit below the pipeline, so
the lowering driver hands it to them as ``Converter.lower_called``. A called model's
inputs are the tensors passed to it, in their types and PyTorch's order (a 0-D tensor as
[1]), and it has one output per returned tensor, in PyTorch's order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.codes import OperationType as Op
from ..errors import Unsupported
from .values import TensorValue

if TYPE_CHECKING:
    from ...nnapi.model import Model
    from .context import Converter


@dataclass(frozen=True)
class CalledModel:
    """A finished model an IF or WHILE calls, and the tensors it returns: their operands
    are the called model's; their shapes, dtypes and quantization are what the calling
    operation's outputs take (a 0-D result is held as [1])."""

    model: Model
    results: tuple[TensorValue, ...]
    ranks: tuple[int, ...]  # the PyTorch rank of each result


# (converter, graph module, its arguments: tensors the model computes, constants, numbers)
CalledLowering = Callable[["Converter", object, Sequence[Any]], CalledModel]
_REGISTERED: list[CalledLowering] = []


def register_called_lowering(fn: CalledLowering) -> CalledLowering:
    """Registers the pipeline's lowering of called models (``pipeline/called.py``), which
    every ``Converter`` then offers its lowerings as ``lower_called``."""
    _REGISTERED[:] = [fn]
    return fn


def registered_called_lowering() -> CalledLowering | None:
    return _REGISTERED[0] if _REGISTERED else None


def passed_operand(cx: Converter, t: TensorValue) -> TensorValue:
    """``t`` as a called model takes it: in PyTorch's order, a 0-D tensor as [1]."""
    t = cx.contiguous(t)
    return one_element(cx, t) if t.rank == 0 else t


def one_element(cx: Converter, t: TensorValue) -> TensorValue:
    """A 0-D tensor as [1] (an IF's condition, a called model's boundary). NNAPI reshapes
    no bools: one is broadcast against a false [1] by LOGICAL_OR instead."""
    if t.dtype != "bool":
        return cx.reshape(t, (1,))
    false = cx.constant(np.zeros((1,), np.bool_), "bool")
    return cx.emit(Op.LOGICAL_OR, dict(input0=t, input1=false), (1,), "bool")


def model_operand(cx: Converter, called: CalledModel) -> int:
    """A MODEL operand referring to ``called``'s model."""
    index = cx.model.add_operand(OperandType.MODEL)
    cx.model.set_operand_value_from_model(index, called.model)
    return index


def lower_called(cx: Converter, module: object, args: Sequence[Any], role: str) -> CalledModel:
    """``module`` lowered into a model of its own, on ``args`` (``role`` names it in
    errors: "the true branch")."""
    if cx.lower_called is None:
        raise Unsupported(f"{role}: this converter lowers no called models")
    try:
        return cx.lower_called(cx, module, args)
    except Unsupported as e:
        raise Unsupported(f"{role} does not convert: {e}") from None


def results_of(cx: Converter, called: CalledModel) -> tuple[list[TensorValue], list[Any]]:
    """New operands of the calling model for ``called``'s results (what the operation
    writes), and the values the node returns (0-D results reshaped back from [1])."""
    written, returned = [], []
    for result, rank in zip(called.results, called.ranks, strict=True):
        out = cx.new_tensor(result.shape, result.dtype, None, result.scale, result.zero_point)
        written.append(out)
        returned.append(cx.reshape(out, ()) if rank == 0 else out)
    return written, returned


def disagreement(first: CalledModel, second: CalledModel, names: tuple[str, str]
                 ) -> str | None:
    """How the results of two called models that must agree (an IF's branches) differ."""
    if len(first.results) != len(second.results):
        return (f"{names[0]} returns {len(first.results)} tensors, {names[1]}"
                f" {len(second.results)}")
    for i, (a, b) in enumerate(zip(first.results, second.results, strict=True)):
        if (a.shape, a.dtype, a.scale, a.zero_point) != (b.shape, b.dtype, b.scale,
                                                         b.zero_point):
            return (f"result {i} is {_describe(a)} in {names[0]} but {_describe(b)} in"
                    f" {names[1]}")
    return None


def _describe(t: TensorValue) -> str:
    quant = f" (scale {t.scale}, zero point {t.zero_point})" if t.is_quantized else ""
    return f"a {t.dtype} tensor of shape {list(t.shape)}{quant}"
