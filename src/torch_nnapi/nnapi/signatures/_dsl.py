"""A small declarative language for NNAPI operation signatures.

Each operation declares, once, what NeuralNetworks.h documents for it:

* one or more *forms* (e.g. CONV_2D's explicit and implicit padding), each a list of named
  inputs and outputs written as ``"name:type"`` tokens. ``[ ... ]`` encloses an optional
  trailing group (all or nothing; groups nest), ``[@3 ...]`` says the group needs feature
  level 3. A ``?`` suffix marks an input that may be an omitted operand (no value); a ``*``
  suffix marks a variadic input or output (one or more). ``=value`` gives the value
  NeuralNetworks.h says an absent optional scalar stands for (``nchw:bool=false``,
  ``dilation_w:i32=1``; ``axis:i32=last`` is -1, the last axis, whichever way it is counted):
  kernels read it when the input is left out, and the converter leaves out inputs that hold it.
  The type ``any`` accepts every operand type (what IF and WHILE pass through to the models
  they call; rules then compare those operands with the called models').
* *type combinations*: bindings of the type variables used in the forms (``T``, ``B``, ...)
  to concrete operand types, each with the feature level that introduced it.
* *rules*: quantization-parameter constraints between named operands.

The model validator (``nnapi.model``), the C API, ``inspect`` and the generated docs all read
these declarations, so they are the single source of truth for operation signatures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from ..codes import FeatureLevel, OperandType, OperationType
from ..operand_types import SHORT_NAMES


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
LAST_AXIS = "last"  # the default token of axis inputs: -1, or equally rank - 1
ANY = "any"  # the type of arguments that may have any operand type


@dataclass(frozen=True)
class Arg:
    """One named input or output position of a form."""

    name: str
    type_ref: str  # a type variable ("T") or a concrete short type name ("i32")
    omittable: bool = False
    variadic: bool = False
    # What an absent (optional, trailing) input means, as declared; NO_DEFAULT if nothing.
    default: Any = NO_DEFAULT
    counts_from_end: bool = False  # an axis default: -1 and rank - 1 are the same axis

    def resolve(self, bindings: Mapping[str, OperandType]) -> OperandType | None:
        """The operand type this argument has under ``bindings``; None for ``any``."""
        if self.type_ref in bindings:
            return bindings[self.type_ref]
        if self.type_ref == ANY:
            return None
        return SHORT_NAMES[self.type_ref]

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def holds_default(self, value: Any, rank: int) -> bool:
        """True when ``value`` means what leaving this input out means (for an input of
        ``rank`` dimensions, where the default is an axis)."""
        if not self.has_default:
            return False
        if self.counts_from_end and value == rank + self.default:
            return True
        return bool(value == self.default)


@dataclass(frozen=True)
class Cut:
    """A legal length of an argument list, and the feature level that length needs."""

    length: int
    level: int


@dataclass(frozen=True)
class Form:
    name: str
    inputs: tuple[Arg, ...]
    input_cuts: tuple[Cut, ...]
    outputs: tuple[Arg, ...]
    output_cuts: tuple[Cut, ...]

    def describe(self, bindings: Mapping[str, OperandType] | None = None) -> str:
        def show(args: Sequence[Arg], cuts: Sequence[Cut]) -> str:
            parts = []
            required = min(c.length for c in cuts)
            for i, a in enumerate(args):
                t = bindings[a.type_ref].name if bindings and a.type_ref in bindings \
                    else a.type_ref
                token = f"{a.name}:{t}{'?' if a.omittable else ''}{'*' if a.variadic else ''}"
                if a.has_default:
                    token += f"={_show_default(a)}"
                parts.append(f"[{token}]" if i >= required else token)
            return " ".join(parts)

        return f"({show(self.inputs, self.input_cuts)}) -> ({show(self.outputs, self.output_cuts)})"


@dataclass(frozen=True)
class Combo:
    """A binding of type variables to operand types, available since ``level``."""

    level: int
    bindings: Mapping[str, OperandType]

    def describe(self) -> str:
        return ", ".join(f"{k}={v.name}" for k, v in self.bindings.items())


RuleFn = Callable[["RuleContext"], Optional[str]]
LevelFn = Callable[["RuleContext"], Optional[int]]


@dataclass(frozen=True)
class Rule:
    """A constraint on operand parameters; ``check`` returns an error message or None."""

    description: str
    check: RuleFn


@dataclass(frozen=True)
class LevelRule:
    """A feature-level requirement that depends on operand parameters, not only on types
    (e.g. quant8 CONCATENATION inputs quantized unlike the output need level 3).
    ``needs`` returns the level the operation needs, or None for no extra requirement."""

    description: str
    needs: LevelFn


@dataclass(frozen=True)
class OperationSignature:
    operation: OperationType
    forms: tuple[Form, ...]
    combos: tuple[Combo, ...]
    rules: tuple[Rule | LevelRule, ...] = ()
    summary: str = ""

    @property
    def level(self) -> FeatureLevel:
        return self.operation.feature_level

    def operand_types_by_level(self) -> dict[int, list[OperandType]]:
        """The primary operand type of each combination, grouped by level.

        The primary input is the first one typed by a type variable (SELECT's input1, not its
        fixed bool8 condition), or the first input when none is.
        """
        inputs = self.forms[0].inputs
        primary_arg = next((a for a in inputs if a.type_ref[0].isupper()), inputs[0])
        out: dict[int, list[OperandType]] = {}
        for combo in self.combos:
            primary = primary_arg.resolve(combo.bindings)
            level = max(combo.level, int(self.level))
            if primary is not None and primary not in sum(out.values(), []):
                out.setdefault(level, []).append(primary)
        return out


@dataclass
class SignatureMatch:
    """Which form and type combination an operation matched, and the level it needs."""

    signature: OperationSignature
    form: Form
    combo: Combo
    level: int
    input_positions: dict[str, list[int]] = field(default_factory=dict)
    output_positions: dict[str, list[int]] = field(default_factory=dict)


class RuleContext:
    """What a rule sees: the matched operation's operands by argument name."""

    def __init__(self, operands: Sequence, inputs: Sequence[int], outputs: Sequence[int],
                 match: SignatureMatch):
        self._operands = operands
        self._inputs = inputs
        self._outputs = outputs
        self.match = match

    def type_of(self, var: str) -> OperandType | None:
        return self.match.combo.bindings.get(var)

    def input(self, name: str, k: int = 0):
        """The operand bound to input ``name`` (k-th for variadic), or None if absent."""
        positions = self.match.input_positions.get(name, [])
        return self._operands[self._inputs[positions[k]]] if k < len(positions) else None

    def inputs(self, name: str) -> list:
        return [self._operands[self._inputs[p]] for p in self.match.input_positions.get(name, [])]

    def output(self, name: str, k: int = 0):
        positions = self.match.output_positions.get(name, [])
        return self._operands[self._outputs[positions[k]]] if k < len(positions) else None

    def outputs(self, name: str) -> list:
        return [self._operands[self._outputs[p]] for p in self.match.output_positions.get(name, [])]

    def describe(self, direction: str, name: str) -> list[str]:
        """How messages name the operation's operands of argument ``name``, one per operand:
        "input 3 (operand 5)"."""
        positions = (self.match.input_positions if direction == "input"
                     else self.match.output_positions).get(name, [])
        indices = self._inputs if direction == "input" else self._outputs
        return [f"{direction} {p} (operand {indices[p]})" for p in positions]


# --------------------------------------------------------------------------------------------
# Parsing the argument-list notation


def _parse_args(spec: str, where: str) -> tuple[tuple[Arg, ...], tuple[Cut, ...]]:
    """Parses ``"a:T b:i32 [@3 c:bool [d:i32 e:i32]]"`` into args and legal cut points."""
    tokens = spec.replace("[", " [ ").replace("]", " ] ").split()
    args: list[Arg] = []
    cuts: list[Cut] = []
    level_stack = [1]  # the feature level each open group needs
    content_level = 1  # the level needed by every argument read so far
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            level = level_stack[-1]
            if i + 1 < len(tokens) and tokens[i + 1].startswith("@"):
                level = max(level, int(tokens[i + 1][1:]))
                i += 1
            cuts.append(Cut(len(args), content_level))
            level_stack.append(level)
        elif tok == "]":
            if len(level_stack) == 1:
                raise ValueError(f"{where}: unbalanced ']' in {spec!r}")
            level_stack.pop()
        else:
            name, sep, type_ref = tok.partition(":")
            if not sep or not name or not type_ref:
                raise ValueError(f"{where}: bad argument token {tok!r}")
            type_ref, has_default, default_token = type_ref.partition("=")
            if has_default and len(level_stack) == 1:
                raise ValueError(f"{where}: {tok!r} has a default but is not optional")
            omittable = variadic = False
            while type_ref[-1] in "?*":
                omittable |= type_ref[-1] == "?"
                variadic |= type_ref[-1] == "*"
                type_ref = type_ref[:-1]
            if not (type_ref in SHORT_NAMES or type_ref == ANY or type_ref[0].isupper()):
                raise ValueError(f"{where}: unknown type {type_ref!r} in {tok!r}")
            default = _parse_default(default_token, where, tok) if has_default else NO_DEFAULT
            args.append(Arg(name, type_ref, omittable, variadic, default,
                            default_token == LAST_AXIS))
            content_level = max(content_level, level_stack[-1])
        i += 1
    if len(level_stack) != 1:
        raise ValueError(f"{where}: unbalanced '[' in {spec!r}")
    cuts.append(Cut(len(args), content_level))
    if sum(a.variadic for a in args) > 1:
        raise ValueError(f"{where}: at most one variadic argument")
    return tuple(args), tuple(cuts)


def _show_default(arg: Arg) -> str:
    if arg.counts_from_end:
        return LAST_AXIS
    return str(arg.default).lower() if isinstance(arg.default, bool) else str(arg.default)


def _parse_default(token: str, where: str, arg: str) -> Any:
    if token in ("true", "false"):
        return token == "true"
    if token == LAST_AXIS:
        return -1
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"{where}: bad default {token!r} in {arg!r}") from None


def form(name: str, inputs: str, outputs: str) -> Form:
    ins, in_cuts = _parse_args(inputs, f"form {name!r} inputs")
    outs, out_cuts = _parse_args(outputs, f"form {name!r} outputs")
    return Form(name, ins, in_cuts, outs, out_cuts)


def combo(level: int, **bindings: OperandType | str) -> Combo:
    resolved = {
        k: (SHORT_NAMES[v] if isinstance(v, str) else OperandType(v)) for k, v in bindings.items()
    }
    return Combo(level, resolved)


def rule(description: str) -> Callable[[RuleFn], Rule]:
    def wrap(fn: RuleFn) -> Rule:
        return Rule(description, fn)

    return wrap


def level_rule(description: str) -> Callable[[LevelFn], LevelRule]:
    def wrap(fn: LevelFn) -> LevelRule:
        return LevelRule(description, fn)

    return wrap


# --------------------------------------------------------------------------------------------
# Matching


def _expand(args: Sequence[Arg], cuts: Sequence[Cut], count: int):
    """Yields (position -> Arg list, level) for each way ``count`` positions fit the args."""
    variadic_at = next((i for i, a in enumerate(args) if a.variadic), None)
    for cut in cuts:
        if variadic_at is None or variadic_at >= cut.length:
            if cut.length == count:
                yield list(args[: cut.length]), cut.level
        else:
            repeats = count - (cut.length - 1)
            if repeats >= 1:
                prefix = list(args[:variadic_at])
                yield prefix + [args[variadic_at]] * repeats + list(
                    args[variadic_at + 1 : cut.length]
                ), cut.level


@dataclass
class MatchFailure:
    """Why the best candidate failed, used to build an error message."""

    score: int
    message: str
    # The operation's input or output the failure is about, when it is about one.
    direction: str = ""
    position: int = -1


def match_signature(
    signature: OperationSignature,
    input_types: Sequence[OperandType],
    output_types: Sequence[OperandType],
    omitted_inputs: Sequence[bool],
) -> SignatureMatch | MatchFailure:
    """Finds the form and type combination these operand types fit, or the closest miss."""
    best = MatchFailure(-1, "")
    counts_fit = False
    for f in signature.forms:
        for in_args, in_level in _expand(f.inputs, f.input_cuts, len(input_types)):
            for out_args, out_level in _expand(f.outputs, f.output_cuts, len(output_types)):
                counts_fit = True
                for c in signature.combos:
                    result = _match_one(signature, f, c, in_args, out_args, input_types,
                                        output_types, omitted_inputs)
                    if isinstance(result, SignatureMatch):
                        result.level = max(result.level, in_level, out_level)
                        return result
                    if result.score > best.score:
                        best = result
    if not counts_fit:
        forms = "; ".join(
            f"{f.name}: {sorted({c.length for c in f.input_cuts})} inputs"
            f" and {sorted({c.length for c in f.output_cuts})} outputs"
            for f in signature.forms
        )
        return MatchFailure(0, f"has {len(input_types)} inputs and {len(output_types)} outputs;"
                               f" expected {forms}")
    return best


def _match_one(signature, f, c, in_args, out_args, input_types, output_types, omitted):
    score = 0
    for direction, args, types in (("input", in_args, input_types),
                                   ("output", out_args, output_types)):
        for pos, (arg, actual) in enumerate(zip(args, types)):
            try:
                expected = arg.resolve(c.bindings)
            except KeyError:
                return MatchFailure(score, f"{direction} {pos} ({arg.name}): type variable"
                                           f" {arg.type_ref} unbound", direction, pos)
            if expected is not None and actual != expected:
                return MatchFailure(score, f"{direction} {pos} ({arg.name}) is {actual.name},"
                                           f" expected {expected.name} (for {c.describe()})",
                                    direction, pos)
            if direction == "input" and omitted[pos] and not arg.omittable:
                return MatchFailure(score, f"input {pos} ({arg.name}) has no value but is"
                                           " required", direction, pos)
            score += 1
    m = SignatureMatch(signature, f, c, max(c.level, int(signature.level)))
    for pos, arg in enumerate(in_args):
        m.input_positions.setdefault(arg.name, []).append(pos)
    for pos, arg in enumerate(out_args):
        m.output_positions.setdefault(arg.name, []).append(pos)
    return m


def enumerate_combos(level: int, var: str, types: Iterable[str], **fixed: str) -> list[Combo]:
    """One combination per type in ``types`` for ``var``, all other variables fixed."""
    return [combo(level, **{var: t}, **fixed) for t in types]
