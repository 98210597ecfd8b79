"""Which operations a device supports: an ordered list of rules, the first matching one decides.

A rule names operations (or ``"*"``, every operation) and conditions on their operands, read
by the names the operation signatures declare (``input``, ``filter``, ``dilation_w``; see
``nnapi/signatures``) or by position (``"0"``, the first input, which is what Android's
sample drivers and its partitioner look at). docs/device_profiles.md is the user's guide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..codes import OperandType, OperationType
from ..model import Lifetime, Model, Operand
from ..signatures import SIGNATURES, Arg, RuleContext, SignatureMatch, signature_of
from ._fields import Field

LAYOUTS = ("NHWC", "NCHW")
LAYOUT_ARGUMENT = "nchw"  # the name every signature gives its layout flag
Scalar = bool | int | float


@dataclass(frozen=True)
class Bounds:
    """An inclusive range of numbers, either end open."""

    low: float | None = None
    high: float | None = None

    def holds(self, number: float) -> bool:
        return (self.low is None or number >= self.low) and \
            (self.high is None or number <= self.high)

    def __str__(self) -> str:
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"[{low}, {high}]"


@dataclass(frozen=True)
class OperandCondition:
    """What one operand must be; a None condition is not checked."""

    types: frozenset[OperandType] | None = None
    ranks: frozenset[int] | None = None
    max_rank: int | None = None
    scale: Bounds | None = None
    zero_point: Bounds | None = None
    values: tuple[Scalar, ...] | None = None
    constant: bool | None = None
    fully_specified: bool | None = None

    def holds_by_default(self, default: object) -> bool:
        """Whether an optional input left out meets the conditions: it has only its declared
        ``default`` (None: none), which a ``value`` condition reads and no other can."""
        return self.values is not None and self == OperandCondition(values=self.values) \
            and default is not None and default in self.values

    def holds(self, operand: Operand) -> bool:
        """Whether ``operand`` meets every condition."""
        return not self.failure(operand)

    def failure(self, operand: Operand) -> str:
        """The first condition ``operand`` fails, in words ("" when it meets them all)."""
        if self.types is not None and operand.type not in self.types:
            return f"is {operand.type.name}, not {' or '.join(sorted(t.name for t in self.types))}"
        rank = len(operand.dimensions) if operand.rank_known else None
        if self.ranks is not None and rank not in self.ranks:
            return f"has rank {rank}, not {' or '.join(map(str, sorted(self.ranks)))}"
        if self.max_rank is not None and (rank is None or rank > self.max_rank):
            return f"has rank {rank}, above {self.max_rank}"
        if self.scale is not None and not self.scale.holds(operand.scale):
            return f"has scale {operand.scale:g}, outside {self.scale}"
        if self.zero_point is not None and not self.zero_point.holds(operand.zero_point):
            return f"has zero point {operand.zero_point}, outside {self.zero_point}"
        is_constant = operand.lifetime is Lifetime.CONSTANT
        if self.constant is not None and is_constant != self.constant:
            return "is not a constant" if self.constant else "is a constant"
        if self.fully_specified is not None and operand.fully_specified != self.fully_specified:
            return "has unknown dimensions" if self.fully_specified else "is fully specified"
        if self.values is not None:
            if not (is_constant and operand.is_scalar and operand.value is not None):
                return "is not a constant scalar"  # a value the driver cannot see
            if operand.value.item() not in self.values:
                return f"is {operand.value.item()}, not one of {list(self.values)}"
        return ""


@dataclass(frozen=True)
class OperandReference:
    """An operand of an operation: by signature name, or by position when ``position`` is
    set. ``direction`` is "input" or "output"."""

    direction: str
    name: str
    position: int | None

    def operands(self, ctx: RuleContext, operation_inputs: Sequence[int],
                 operation_outputs: Sequence[int], operands: Sequence[Operand]) \
            -> list[Operand] | None:
        """The operands referred to (several for a variadic name), [] when an optional input
        is left out, None when the operation has no such argument."""
        indices = operation_inputs if self.direction == "input" else operation_outputs
        if self.position is not None:
            return [operands[indices[self.position]]] if self.position < len(indices) else None
        if self.name not in _argument_names(ctx.match, self.direction):
            return None
        return ctx.inputs(self.name) if self.direction == "input" else ctx.outputs(self.name)


@dataclass(frozen=True)
class SupportRule:
    """One rule: for ``operations`` (None: all) whose operands meet ``conditions`` (and whose
    layout is ``layout``, when given), the device supports the operation if ``supported``."""

    operations: frozenset[OperationType] | None
    conditions: tuple[tuple[OperandReference, OperandCondition], ...]
    layout: str | None
    supported: bool
    comment: str = ""

    def matches(self, model: Model, index: int) -> bool:
        """Whether this rule applies to operation ``index`` of the finished ``model``."""
        return not self.mismatch(model, index)

    def mismatch(self, model: Model, index: int) -> str:
        """Why this rule does not apply to operation ``index``, in words ("" when it does)."""
        operation, match = model.operations[index], model.matches[index]
        if self.operations is not None and operation.type not in self.operations:
            return f"it is not about {operation.type.name}"
        ctx = RuleContext(model.operands, operation.inputs, operation.outputs, match)
        if self.layout is not None and _layout(ctx, match) != self.layout:
            return f"the layout is {_layout(ctx, match) or 'unknown'}, not {self.layout}"
        for reference, condition in self.conditions:
            found = reference.operands(ctx, operation.inputs, operation.outputs, model.operands)
            what = f"{reference.direction} {reference.name!r}"
            if found is None:
                return f"it has no {what}"
            if not found:  # an optional input left out
                if not condition.holds_by_default(_default(match, reference.name)):
                    return f"{what} is left out"
                continue
            for operand in found:
                failure = condition.failure(operand)
                if failure:
                    return f"{what} {failure}"
        return ""


def supported_operations(rules: Sequence[SupportRule], model: Model) -> list[bool]:
    """Per operation of the finished ``model`` (in its order), whether the first rule that
    matches it says supported; an operation no rule matches is not supported."""
    answer = []
    for index in range(len(model.operations)):
        decided = next((rule.supported for rule in rules if rule.matches(model, index)), False)
        answer.append(decided)
    return answer


def why_unsupported(rules: Sequence[SupportRule], model: Model, index: int) -> str:
    """Which rule of the profile turns operation ``index`` down, in one line: the rule saying
    ``"supported": false`` that decides it, or, when no rule matches, the first condition each
    rule about the operation fails ("" when the rules support it)."""
    operation = model.operations[index].type
    failures = []
    for position, rule in enumerate(rules):
        name = f"supportedOperations[{position}]" + (f" ({rule.comment})" if rule.comment else "")
        reason = rule.mismatch(model, index)
        if not reason:
            return "" if rule.supported else f"{name} says it is not supported"
        if rule.supported and (rule.operations is None or operation in rule.operations):
            failures.append(f"{name}: {reason}")
    if not failures:
        return f"no rule supports {operation.name}"
    return "; ".join(failures)


def _argument_names(match: SignatureMatch, direction: str) -> set[str]:
    args = match.form.inputs if direction == "input" else match.form.outputs
    return {a.name for a in args}


def _default(match: SignatureMatch, name: str) -> object:
    arg = next((a for a in match.form.inputs if a.name == name), None)
    return arg.default if arg is not None and arg.has_default else None


def _layout(ctx: RuleContext, match: SignatureMatch) -> str | None:
    """NHWC or NCHW as the operation's layout flag says; None when it has none or the flag is
    not a constant."""
    if LAYOUT_ARGUMENT not in _argument_names(match, "input"):
        return None
    flag = ctx.input(LAYOUT_ARGUMENT)
    if flag is None:
        value = _default(match, LAYOUT_ARGUMENT)
    elif flag.lifetime is Lifetime.CONSTANT and flag.value is not None:
        value = bool(flag.value.item())
    else:
        return None
    return None if value is None else LAYOUTS[int(bool(value))]


# ------------------------------------------------------------------------------------------
# Reading rules from JSON

_RULE_FIELDS = ("operations", "inputs", "outputs", "layout", "supported", "comment")
_CONDITION_FIELDS = ("type", "rank", "maxRank", "scale", "zeroPoint", "value", "constant",
                     "fullySpecified")


def read_rules(field: Field) -> tuple[SupportRule, ...]:
    """The rules of a profile's ``supportedOperations`` list."""
    if not isinstance(field.value, list):
        raise field.error("expected a list of rules")
    return tuple(_read_rule(field.child(i)) for i in range(len(field.value)))


def _read_rule(field: Field) -> SupportRule:
    members = field.members(_RULE_FIELDS, required=("operations",))
    operations = _read_operations(members["operations"])
    conditions = []
    for direction in ("input", "output"):
        listed = members.get(direction + "s")
        if listed is None:
            continue
        for key, condition in listed.entries():
            reference = _read_reference(condition, direction, key, operations)
            conditions.append((reference, _read_condition(condition)))
    layout = None
    if "layout" in members:
        layout = members["layout"].string()
        if layout not in LAYOUTS:
            raise members["layout"].error(f"expected NHWC or NCHW, got {layout!r}")
        _require_argument(members["layout"], operations, "input", LAYOUT_ARGUMENT)
    supported = members["supported"].boolean() if "supported" in members else True
    comment = members["comment"].string() if "comment" in members else ""
    return SupportRule(operations, tuple(conditions), layout, supported, comment)


def _read_operations(field: Field) -> frozenset[OperationType] | None:
    if field.value == "*":
        return None
    names = []
    for item in field.items():
        name = item.string()
        if name not in OperationType.__members__:
            raise item.error(f"unknown operation {name!r}")
        names.append(OperationType[name])
    return frozenset(names)


def _read_reference(field: Field, direction: str, key: str,
                    operations: frozenset[OperationType] | None) -> OperandReference:
    if key.isdigit():
        return OperandReference(direction, key, int(key))
    _require_argument(field, operations, direction, key)
    return OperandReference(direction, key, None)


def _require_argument(field: Field, operations: frozenset[OperationType] | None,
                      direction: str, name: str) -> None:
    """A named argument must exist: in every listed operation, or in some operation."""
    def names(op: OperationType) -> set[str]:
        args: list[Arg] = []
        for f in signature_of(op).forms:
            args.extend(f.inputs if direction == "input" else f.outputs)
        return {a.name for a in args}

    if operations is None:
        if not any(name in names(op) for op in SIGNATURES):
            raise field.error(f"no operation has an {direction} named {name!r}")
        return
    for op in sorted(operations):
        if name not in names(op):
            raise field.error(f"{op.name} has no {direction} named {name!r} (its {direction}s:"
                              f" {', '.join(sorted(names(op)))})")


def _read_condition(field: Field) -> OperandCondition:
    members = field.members(_CONDITION_FIELDS)
    types = ranks = values = None
    if "type" in members:
        types = frozenset(_operand_type(item) for item in members["type"].items())
    if "rank" in members:
        ranks = frozenset(item.integer(0, 6) for item in members["rank"].items())
    max_rank = members["maxRank"].integer(0, 6) if "maxRank" in members else None
    if "value" in members:
        values = tuple(_scalar(item) for item in members["value"].items())
    return OperandCondition(
        types=types, ranks=ranks, max_rank=max_rank,
        scale=_bounds(members["scale"]) if "scale" in members else None,
        zero_point=_bounds(members["zeroPoint"]) if "zeroPoint" in members else None,
        values=values,
        constant=members["constant"].boolean() if "constant" in members else None,
        fully_specified=members["fullySpecified"].boolean()
        if "fullySpecified" in members else None)


def _operand_type(field: Field) -> OperandType:
    name = field.string()
    if name not in OperandType.__members__:
        raise field.error(f"unknown operand type {name!r}")
    return OperandType[name]


def _scalar(field: Field) -> Scalar:
    if isinstance(field.value, bool):
        return field.value
    return field.integer() if isinstance(field.value, int) else field.number()


def _bounds(field: Field) -> Bounds:
    """A number (exactly it) or {"min": a, "max": b}, either end optional."""
    if not isinstance(field.value, dict):
        number = field.number()
        return Bounds(number, number)
    members = field.members(("min", "max"))
    low = members["min"].number() if "min" in members else None
    high = members["max"].number() if "max" in members else None
    if low is not None and high is not None and low > high:
        raise field.error(f"min {low:g} is above max {high:g}")
    return Bounds(low, high)
