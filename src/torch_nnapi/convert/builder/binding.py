"""Operation inputs and outputs given by name, as the lowerings emit them.

A lowering names each input the way the operation's signature declares it
(``dict(input=x, filter=w, bias=b, padding=code, ..., nchw=flag)``), so no lowering knows
an operand position. :func:`bind` picks the form those names belong to (CONV_2D's explicit or
implicit padding), orders the operands as that form does and rejects unknown or missing
names. :func:`trimmed_length` then leaves out the trailing optional inputs that hold the
defaults the signature declares: Android 10 (feature level 3) gave older operations optional
inputs (the NCHW flag, dilation factors, axes), and giving one makes the operation need level 3
even at the value an omitted input stands for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...nnapi.codes import OperandType
from ...nnapi.signatures import (
    Arg,
    Cut,
    Form,
    MatchFailure,
    OperationSignature,
    match_signature,
)
from ..errors import ConverterBug

T = TypeVar("T")
# name -> operand; a variadic input or output (CONCATENATION's inputs) takes a list
Named = Mapping[str, T | Sequence[T]]


@dataclass(frozen=True)
class Bound:
    """The operands of one side of an operation in the order of ``form``, with the
    argument each position holds (a variadic argument once per operand)."""

    form: Form
    args: tuple[Arg, ...]
    values: tuple[Any, ...]  # operands of whichever kind the caller gave

    def position_of(self, name: str) -> int | None:
        """Where the (non-variadic) argument ``name`` is, None if not given."""
        return next((p for p, a in enumerate(self.args) if a.name == name), None)


@dataclass(frozen=True)
class Slot:
    """What trimming needs to know of one operation input."""

    type: OperandType
    value: Any | None = None  # a constant scalar's value; None otherwise


class _NotThisForm(Exception):
    """The names given do not fit one form (another form may fit them)."""


def bind(signature: OperationSignature, inputs: Named[Any], outputs: Named[Any]) \
        -> tuple[Bound, Bound]:
    """Orders named inputs and outputs as the form the input names select (the first one, in
    declaration order, that has every given name and is given all its required ones)."""
    op = signature.operation.name
    for side in (inputs, outputs):
        if not isinstance(side, Mapping):
            raise ConverterBug(f"{op}: inputs and outputs are given by name (a mapping),"
                               f" not as a {type(side).__name__}")
    every_name = {a.name for f in signature.forms for a in f.inputs}
    unknown = [n for n in inputs if n not in every_name]
    if unknown:
        raise ConverterBug(f"{op} has no input named {unknown[0]!r} (its inputs:"
                           f" {_input_names(signature.forms)})")
    reasons = []
    for form in signature.forms:
        try:
            bound_inputs = _order(op, form, form.inputs, form.input_cuts, inputs, "input")
        except _NotThisForm as e:
            reasons.append(f"{form.name} form: {e}" if form.name else str(e))
            continue
        try:
            bound_outputs = _order(op, form, form.outputs, form.output_cuts, outputs, "output")
        except _NotThisForm as e:
            raise ConverterBug(f"{op}: {e}") from None
        return bound_inputs, bound_outputs
    raise ConverterBug(f"{op}: {'; '.join(reasons)}")


def _order(op: str, form: Form, args: Sequence[Arg], cuts: Sequence[Cut], given: Named[Any],
           kind: str) -> Bound:
    names = [a.name for a in args]
    unknown = [n for n in given if n not in names]
    if unknown:
        raise _NotThisForm(f"no {kind} named {unknown[0]!r} (its {kind}s: {', '.join(names)})")
    last = max((names.index(n) for n in given), default=-1)
    # the shortest legal list that holds every given name
    length = min(c.length for c in cuts if c.length > last)
    missing = [n for n in names[:length] if n not in given]
    if missing:
        optional = names.index(missing[0]) >= min(c.length for c in cuts)
        needed_by = f" (an optional {kind}, needed with {names[last]!r})" if optional else ""
        raise _NotThisForm(f"{kind} {missing[0]!r} is missing{needed_by}")
    ordered_args: list[Arg] = []
    values: list[Any] = []
    for arg in args[:length]:
        value = given[arg.name]
        is_list = isinstance(value, (list, tuple))
        if arg.variadic and (not is_list or not value):
            raise ConverterBug(f"{op}: {kind} {arg.name!r} takes a non-empty list of operands")
        if not arg.variadic and is_list:
            raise ConverterBug(f"{op}: {kind} {arg.name!r} takes one operand, not a list")
        items = list(value) if is_list else [value]
        ordered_args += [arg] * len(items)
        values += items
    return Bound(form, tuple(ordered_args), tuple(values))


def _input_names(forms: Sequence[Form]) -> str:
    if len(forms) == 1:
        return ", ".join(a.name for a in forms[0].inputs)
    return "; ".join(f"{f.name}: {', '.join(a.name for a in f.inputs)}" for f in forms)


def trimmed_length(signature: OperationSignature, inputs: Bound, slots: Sequence[Slot],
                   output_types: Sequence[OperandType], rank: int) -> int:
    """How many leading inputs the operation needs: trailing optional inputs holding their
    declared defaults (for an ``input`` of ``rank`` dimensions, where a default is an axis)
    are dropped as far as the shorter list is still read as the same form."""
    form = inputs.form
    index_of = {a.name: i for i, a in enumerate(form.inputs)}
    types = [s.type for s in slots]
    best = len(slots)
    for cut in sorted({c.length for c in form.input_cuts}, reverse=True):
        keep = sum(index_of[a.name] < cut for a in inputs.args)
        if keep >= best:
            continue
        if not all(slots[p].value is not None
                   and inputs.args[p].holds_default(slots[p].value, rank)
                   for p in range(keep, best)):
            break
        shorter = match_signature(signature, types[:keep], output_types, [False] * keep)
        if isinstance(shorter, MatchFailure) or shorter.form.name != form.name:
            break
        best = keep
    return best
