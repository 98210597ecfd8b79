"""Optional trailing inputs left out when they hold their documented defaults.

Android 10 (feature level 3) gave older operations optional trailing inputs: the NCHW layout
flag and dilation factors of the convolutions, the layout flag of the pools and of the
space/depth and resize operations, the axis of SOFTMAX, L2_NORMALIZATION and
LOCAL_RESPONSE_NORMALIZATION. Giving one makes the operation need level 3 even at the value
an omitted input stands for, so :func:`trimmed_length` finds the shortest argument list the
operation's signature allows whose dropped inputs all hold those values;
:meth:`Converter.operation <torch_nnapi.convert.context.Converter.operation>` applies it to
every operation the lowerings emit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..nnapi.codes import OperandType, OperationType
from ..nnapi.signatures import match_signature, signature_of
from ..nnapi.signatures._dsl import MatchFailure

# Argument name (as the signatures name it) -> whether a value is what NeuralNetworks.h says
# an omitted input means. ``rank`` is the rank of the operation's input tensor, for axes
# counted from either end.
DEFAULTS: dict[str, Callable[[Any, int], bool]] = {
    "nchw": lambda value, rank: not value,  # "default to false": NHWC
    "dilation_w": lambda value, rank: value == 1,  # "Defaults to 1"
    "dilation_h": lambda value, rank: value == 1,
    # SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION: "default to -1", the last axis
    "axis": lambda value, rank: value in (-1, rank - 1),
    "align_corners": lambda value, rank: not value,  # RESIZE_*: "default to false"
    "half_pixel_centers": lambda value, rank: not value,
}


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
    names: dict[int, str] = {}
    for name, positions in full.input_positions.items():
        for position in positions:
            names[position] = name
    best = len(inputs)
    for cut in sorted({c.length for c in full.form.input_cuts if c.length < len(inputs)},
                      reverse=True):
        if not all(_holds_default(names.get(p), inputs[p], rank) for p in range(cut, best)):
            break
        shorter = match_signature(signature, types[:cut], output_types, [False] * cut)
        if isinstance(shorter, MatchFailure) or shorter.form.name != full.form.name:
            break
        best = cut
    return best


def _holds_default(name: Optional[str], slot: Slot, rank: int) -> bool:
    is_default = DEFAULTS.get(name or "")
    return is_default is not None and slot.value is not None and bool(is_default(slot.value,
                                                                                 rank))
