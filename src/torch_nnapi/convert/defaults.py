"""Optional trailing inputs left out when they hold their documented defaults.

Android 10 (feature level 3) gave older operations optional trailing inputs: the NCHW layout
flag and dilation factors of the convolutions, the layout flag of the pools and of the
space/depth and resize operations, the axis of SOFTMAX, L2_NORMALIZATION and
LOCAL_RESPONSE_NORMALIZATION. Giving one makes the operation need level 3 even at the value
an omitted input stands for (its default, declared in the operation's signature), so
:func:`trimmed_length` finds the shortest argument list the operation's signature allows
whose dropped inputs all hold their defaults;
:meth:`Converter.operation <torch_nnapi.convert.context.Converter.operation>` applies it to
every operation the lowerings emit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ..nnapi.codes import OperandType, OperationType
from ..nnapi.signatures import match_signature, signature_of
from ..nnapi.signatures._dsl import MatchFailure


@dataclass(frozen=True)
class Slot:
    """What trimming needs to know of one operation input."""

    type: OperandType
    value: Optional[Any] = None  # a constant scalar's value; None otherwise


def trimmed_length(op: OperationType, inputs: Sequence[Slot],
                   output_types: Sequence[OperandType], rank: int) -> int:
    """How many leading inputs the operation needs: trailing optional inputs at their
    defaults are dropped as far as a legal shorter form of the same signature allows."""
    try:
        signature = signature_of(op)
    except NotImplementedError:
        return len(inputs)  # Model.add_operation reports the missing signature
    types = [s.type for s in inputs]
    full = match_signature(signature, types, output_types, [False] * len(types))
    if isinstance(full, MatchFailure):
        return len(inputs)  # Model.add_operation reports the problem
    arg_at = {p: arg for arg in full.form.inputs for p in full.input_positions.get(arg.name, [])}
    best = len(inputs)
    for cut in sorted({c.length for c in full.form.input_cuts if c.length < len(inputs)},
                      reverse=True):
        if not all(inputs[p].value is not None and arg_at[p].holds_default(inputs[p].value, rank)
                   for p in range(cut, best)):
            break
        shorter = match_signature(signature, types[:cut], output_types, [False] * cut)
        if isinstance(shorter, MatchFailure) or shorter.form.name != full.form.name:
            break
        best = cut
    return best
