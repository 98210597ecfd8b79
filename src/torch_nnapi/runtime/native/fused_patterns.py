"""Chains the converter emits whole, recognised inside a fused element-wise group (fused.py) so
that one instruction of fused_f32.c computes them in registers instead of one pass per
operation: GELU in its erf form (22 operations) and its tanh form (8), and a layer norm's
normalization (MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL; fused.py folds a weight's MUL and a
bias's ADD after it into the same instruction).

Each template is its lowering's formula (convert/lowerings/activation.py, norm.py) with the
constants left open: a match reads them from the model, and the instruction computes exactly
the matched operations in their order and float32 roundings, so the result is the generic
program's. ADD and MUL match either operand order (IEEE commutative); a fused activation,
a constant of more than one element or an intermediate read outside the match ends it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ...nnapi.codes import OperationType as Op

_COMMUTATIVE = (Op.ADD, Op.MUL)


class Node(Protocol):
    """One operation of a group as fused.py describes it."""

    kind: Op
    operands: tuple[int, ...]
    result: int
    clamp: tuple[float, float] | None


@dataclass(frozen=True, eq=False)
class Term:
    """A template's operation (``kind``) or leaf: the chain's input or constant ``constant``."""

    kind: Op | None
    args: tuple[Term, ...] = ()
    constant: int = -1


INPUT = Term(None)


def _k(index: int) -> Term:
    return Term(None, constant=index)


def _op(kind: Op, *args: Term) -> Term:
    return Term(kind, args)


def _gelu_erf() -> Term:
    """0.5 (x + |x| - |x| erfc(|x| / sqrt 2)), erfc = t poly(t) exp(-z^2), t = 1 / (1 + p z)."""
    ax = _op(Op.ABS, INPUT)
    z = _op(Op.MUL, ax, _k(0))
    t = _op(Op.DIV, _k(2), _op(Op.ADD, _op(Op.MUL, z, _k(1)), _k(3)))
    poly = _op(Op.MUL, t, _k(4))
    for index in range(5, 9):
        poly = _op(Op.MUL, _op(Op.ADD, poly, _k(index)), t)
    erfc = _op(Op.MUL, poly, _op(Op.EXP, _op(Op.NEG, _op(Op.MUL, z, z))))
    total = _op(Op.SUB, _op(Op.ADD, INPUT, ax), _op(Op.MUL, ax, erfc))
    return _op(Op.MUL, total, _k(9))


def _gelu_tanh() -> Term:
    """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    cube = _op(Op.MUL, _op(Op.MUL, INPUT, INPUT), INPUT)
    inner = _op(Op.MUL, _op(Op.ADD, INPUT, _op(Op.MUL, cube, _k(0))), _k(1))
    shifted = _op(Op.ADD, _op(Op.TANH, inner), _k(2))
    return _op(Op.MUL, _op(Op.MUL, INPUT, shifted), _k(3))


def _normalize() -> Term:
    """(x - mean) * rsqrt(mean((x - mean)^2) + eps) along the row."""
    deviation = _op(Op.SUB, INPUT, _op(Op.MEAN, INPUT))
    variance = _op(Op.MEAN, _op(Op.MUL, deviation, deviation))
    return _op(Op.MUL, deviation, _op(Op.RSQRT, _op(Op.ADD, variance, _k(0))))


# name -> (template, number of constants); fused.py maps the names to its opcodes.
TEMPLATES: dict[str, tuple[Term, int]] = {
    "gelu_erf": (_gelu_erf(), 10), "gelu_tanh": (_gelu_tanh(), 4),
    "normalize": (_normalize(), 1)}


@dataclass
class Match:
    """A template matched at ``nodes[root]``: its input operand, constants, nodes covered."""

    name: str
    root: int
    source: int
    constants: tuple[float, ...]
    covered: frozenset[int]


_Bindings = tuple[dict[Term, int], dict[int, float]]


class _Matcher:
    """Matches templates against the group's operands, backtracking over operand orders."""

    def __init__(self, nodes: Sequence[Node], constant: Callable[[int], float | None]):
        self.nodes = nodes
        self.constant = constant
        self.producer = {node.result: k for k, node in enumerate(nodes)}

    def match(self, term: Term, operand: int, bound: _Bindings) -> Iterator[_Bindings]:
        terms, constants = bound
        if term in terms:
            if terms[term] == operand:
                yield bound
            return
        if term.kind is None:
            yield from self._leaf(term, operand, bound)
            return
        k = self.producer.get(operand)
        if k is None:
            return
        node = self.nodes[k]
        if node.kind != term.kind or node.clamp is not None or \
                len(node.operands) != len(term.args):
            return
        start = ({**terms, term: operand}, constants)
        orders = [term.args]
        if term.kind in _COMMUTATIVE and term.args[0] is not term.args[1]:
            orders.append(term.args[::-1])
        for args in orders:
            yield from self._all(args, node.operands, start)

    def _all(self, terms: Sequence[Term], operands: Sequence[int],
             bound: _Bindings) -> Iterator[_Bindings]:
        if not terms:
            yield bound
            return
        for first in self.match(terms[0], operands[0], bound):
            yield from self._all(terms[1:], operands[1:], first)

    def _leaf(self, term: Term, operand: int, bound: _Bindings) -> Iterator[_Bindings]:
        terms, constants = bound
        if term.constant < 0:
            yield ({**terms, term: operand}, constants)
            return
        value = self.constant(operand) if operand not in self.producer else None
        if value is None or constants.get(term.constant, value) != value:
            return
        yield ({**terms, term: operand}, {**constants, term.constant: value})


def find(nodes: Sequence[Node], constant: Callable[[int], float | None],
         result: int) -> list[Match]:
    """The templates matched in ``nodes`` (model order), none overlapping, each of whose
    intermediate results is read inside it alone and is not ``result`` (the group's)."""
    matcher = _Matcher(nodes, constant)
    readers: dict[int, set[int]] = {}
    for k, node in enumerate(nodes):
        for operand in node.operands:
            readers.setdefault(operand, set()).add(k)
    matches: list[Match] = []
    taken: set[int] = set()
    for root in reversed(range(len(nodes))):
        if root in taken:
            continue
        for name, (template, count) in TEMPLATES.items():
            match = _first(matcher, name, template, count, root, readers, result)
            if match is not None and not match.covered & taken:
                matches.append(match)
                taken |= match.covered
                break
    return matches[::-1]


def _first(matcher: _Matcher, name: str, template: Term, count: int, root: int,
           readers: dict[int, set[int]], result: int) -> Match | None:
    nodes = matcher.nodes
    for terms, constants in matcher.match(template, nodes[root].result, ({}, {})):
        source = terms[INPUT]
        covered = frozenset(matcher.producer[o] for t, o in terms.items() if t.kind is not None)
        inside = all(readers.get(nodes[k].result, set()) <= covered and
                     nodes[k].result != result for k in covered if k != root)
        if inside and source not in (nodes[k].result for k in covered) and \
                len(constants) == count:
            return Match(name, root, source, tuple(constants[i] for i in range(count)),
                         covered)
    return None
