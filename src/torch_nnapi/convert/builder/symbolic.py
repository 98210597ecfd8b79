"""Integers known only at load time: expressions over the model's flexible input dimensions.

A dimension marked flexible is not baked into the converted model. Every size derived from
it (an output height, a reshape target, a padding amount) is a :class:`Sym`, an expression
tree over input dimensions that also carries its value for the example inputs (``hint``).
Where such a value lands in the serialized model, the converter records a *patch*: a small
postfix program the TorchScript wrapper evaluates on the real input shapes at load time
(see ``torchscript/module.py``), as the prototype's author proposed for camera-resolution
independence.

Program encoding (a flat list of ints, evaluated on a stack):
``CONST c`` pushes c; ``DIM i d`` pushes dimension d of input i (PyTorch order); the
binary operators pop b then a and push ``a op b``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

CONST, DIM, ADD, SUB, MUL, FLOORDIV, MOD, MAX, MIN = range(9)

_BINARY: dict[str, tuple[int, Callable[[int, int], int]]] = {
    "add": (ADD, lambda a, b: a + b),
    "sub": (SUB, lambda a, b: a - b),
    "mul": (MUL, lambda a, b: a * b),
    "floordiv": (FLOORDIV, lambda a, b: a // b),
    "mod": (MOD, lambda a, b: a % b),
    "max": (MAX, max),
    "min": (MIN, min),
}
_BY_CODE = {code: fn for code, fn in _BINARY.values()}


class Sym:
    """An integer expression over flexible input dimensions, with its example value."""

    __slots__ = ("op", "args", "hint", "_key", "nonneg", "multiple")

    def __init__(self, op: str, args: tuple[SymInt, SymInt], hint: int):
        self.op = op
        self.args = args
        self.hint = int(hint)
        self._key: tuple[object, ...] = (
            op, tuple(a._key if isinstance(a, Sym) else a for a in args))
        # known to be >= 0 for every input shape (dimensions are; sums and products of
        # such values too), which lets max(x, 0) and friends simplify
        # a static divisor of the value for every input shape (Swin pads sizes up to a
        # multiple of its window, ``x + (k - x % k) % k``; export then divides by the count)
        self.multiple = _known_multiple(op, args)
        if op == "dim":
            self.nonneg = True
        else:
            a, b = args
            if op in ("add", "mul"):
                self.nonneg = _nonneg(a) and _nonneg(b)
            elif op == "floordiv":
                self.nonneg = _nonneg(a) and _positive(b)
            elif op == "mod":  # Python's remainder takes the divisor's sign
                self.nonneg = _positive(b)
            elif op == "max":
                self.nonneg = _nonneg(a) or _nonneg(b)
            elif op == "min":
                self.nonneg = _nonneg(a) and _nonneg(b)
            else:
                self.nonneg = False

    # -- arithmetic (results simplify to plain ints where possible)
    def __add__(self, other: SymInt) -> SymInt: return binary("add", self, other)
    def __radd__(self, other: SymInt) -> SymInt: return binary("add", other, self)
    def __sub__(self, other: SymInt) -> SymInt: return binary("sub", self, other)
    def __rsub__(self, other: SymInt) -> SymInt: return binary("sub", other, self)
    def __mul__(self, other: SymInt) -> SymInt: return binary("mul", self, other)
    def __rmul__(self, other: SymInt) -> SymInt: return binary("mul", other, self)
    def __floordiv__(self, other: SymInt) -> SymInt: return binary("floordiv", self, other)
    def __rfloordiv__(self, other: SymInt) -> SymInt: return binary("floordiv", other, self)
    def __mod__(self, other: SymInt) -> SymInt: return binary("mod", self, other)
    def __rmod__(self, other: SymInt) -> SymInt: return binary("mod", other, self)
    def __neg__(self) -> SymInt: return binary("sub", 0, self)

    def __eq__(self, other: object) -> bool:
        """Structural equality: True only when both are the same expression."""
        return isinstance(other, Sym) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __bool__(self) -> bool:
        raise TypeError("the truth of a flexible dimension is not known at conversion time")

    def __index__(self) -> int:
        raise TypeError("a flexible dimension has no fixed integer value")

    def __repr__(self) -> str:
        if self.op == "dim":
            return f"in{self.args[0]}.shape[{self.args[1]}]"
        a, b = self.args
        if self.op in ("max", "min"):
            return f"{self.op}({a!r}, {b!r})"
        symbol = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}[self.op]
        return f"({a!r} {symbol} {b!r})"


SymInt = int | Sym


def _multiple(v: SymInt) -> int:
    """A known divisor of ``v`` (0 for the constant 0, which every number divides)."""
    return v.multiple if isinstance(v, Sym) else abs(int(v))


def _known_multiple(op: str, args: tuple[SymInt, SymInt]) -> int:
    if op == "dim":
        return 1
    a, b = args
    if op == "add" and isinstance(b, Sym) and _rounds_up(a, b):
        return math.lcm(int(b.args[1]), max(_multiple(a), 1))
    if op in ("add", "sub"):
        return math.gcd(_multiple(a), _multiple(b)) or 1
    if op == "mul":
        return max(_multiple(a) * _multiple(b), 1)
    if op == "floordiv" and not isinstance(b, Sym) and int(b) > 0 \
            and _multiple(a) % int(b) == 0:
        return max(_multiple(a) // int(b), 1)
    return 1


def round_up_amount(v: SymInt) -> tuple[SymInt, int] | None:
    """(n, k) when ``v`` is ``(k - n % k) % k``, what brings n up to a multiple of k."""
    if not (isinstance(v, Sym) and v.op == "mod" and not isinstance(v.args[1], Sym)):
        return None
    k, inner = int(v.args[1]), v.args[0]
    if k <= 0 or not (isinstance(inner, Sym) and inner.op == "sub"):
        return None
    first, rest = inner.args
    if (not isinstance(first, Sym) and int(first) == k and isinstance(rest, Sym)
            and rest.op == "mod" and not isinstance(rest.args[1], Sym)
            and int(rest.args[1]) == k):
        return rest.args[0], k
    return None


def _rounds_up(a: SymInt, b: SymInt) -> bool:
    """Whether ``b`` is ``(k - a % k) % k``: then ``a + b`` is a multiple of k."""
    found = round_up_amount(b)
    return found is not None and _structurally_equal(found[0], a)


def _structurally_equal(a: SymInt, b: SymInt) -> bool:
    if isinstance(a, Sym) or isinstance(b, Sym):
        return isinstance(a, Sym) and isinstance(b, Sym) and a == b
    return int(a) == int(b)


def input_dim(input_index: int, dim: int, hint: int) -> Sym:
    """The flexible dimension ``dim`` of model input ``input_index``."""
    return Sym("dim", (int(input_index), int(dim)), hint)


def _nonneg(v: SymInt) -> bool:
    return v.nonneg if isinstance(v, Sym) else int(v) >= 0


def _positive(v: SymInt) -> bool:
    return not isinstance(v, Sym) and int(v) > 0


def _factors(v: SymInt) -> list[SymInt]:
    if isinstance(v, Sym) and v.op == "mul":
        return _factors(v.args[0]) + _factors(v.args[1])
    return [v]


def _product(factors: list[SymInt]) -> SymInt:
    out: SymInt = 1
    for f in factors:
        out = binary("mul", out, f)
    return out


def _divide_exactly(a: SymInt, b: SymInt) -> SymInt | None:
    """a / b when b's factors are among a's (structurally), else None."""
    factors = _factors(a)
    static = 1
    for f in factors:
        static *= 1 if isinstance(f, Sym) else int(f)
    rest = [f for f in factors if isinstance(f, Sym)] + ([static] if static != 1 else [])
    for f in _factors(b):
        for i, g in enumerate(rest):
            if (isinstance(f, Sym) and f == g) or (not isinstance(f, Sym) and not isinstance(
                    g, Sym) and int(g) % int(f) == 0):
                rest[i:i + 1] = [] if isinstance(f, Sym) or int(g) == int(f) else \
                    [int(g) // int(f)]
                break
        else:
            return None
    return _product(rest)


def binary(op: str, a: SymInt, b: SymInt) -> SymInt:
    fn = _BINARY[op][1]
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return fn(int(a), int(b))
    if op == "add":
        if _is(a, 0):
            return b
        if _is(b, 0):
            return a
        if isinstance(a, Sym) and a.op == "add" and not isinstance(b, Sym) \
                and not isinstance(a.args[1], Sym):
            return binary("add", a.args[0], int(a.args[1]) + int(b))  # (x + k) + m
    elif op == "sub":
        if _is(b, 0):
            return a
        if isinstance(a, Sym) and a == b:
            return 0
        if _is(a, 0) and isinstance(b, Sym) and b.op == "sub" and _is(b.args[0], 0):
            return b.args[1]  # 0 - (0 - x)
        if isinstance(a, Sym) and a.op == "add" and not isinstance(b, Sym) \
                and not isinstance(a.args[1], Sym):
            return binary("add", a.args[0], int(a.args[1]) - int(b))  # (x + k) - m
        (base_a, k_a), (base_b, k_b) = _offset(a), _offset(b)
        if isinstance(base_a, Sym) and base_a == base_b:
            return k_a - k_b  # (x + k) - (x + m)
    elif op == "mul":
        if _is(a, 0) or _is(b, 0):
            return 0
        if _is(a, 1):
            return b
        if _is(b, 1):
            return a
    elif op == "floordiv":
        if _is(b, 1):
            return a
        if isinstance(a, Sym) and a == b:
            return 1
        quotient = _divide_exactly(a, b)
        if quotient is not None:
            return quotient
        if isinstance(b, Sym) and b.op == "floordiv" and _structurally_equal(b.args[0], a) \
                and not isinstance(b.args[1], Sym) and int(b.args[1]) > 0 \
                and _multiple(a) % int(b.args[1]) == 0:
            return int(b.args[1])  # (m k) // ((m k) // k), the count of k-sized windows
    elif op in ("max", "min") and isinstance(a, Sym) and a == b:
        return a
    if op == "max":
        if _is(b, 0) and _nonneg(a):
            return a
        if _is(a, 0) and _nonneg(b):
            return b
    elif op == "min" and ((_is(a, 0) and _nonneg(b)) or (_is(b, 0) and _nonneg(a))):
        return 0
    return Sym(op, (a, b), fn(hint(a), hint(b)))


def _offset(v: SymInt) -> tuple[SymInt, int]:
    """``v`` as (x, k) with v = x + k and k a plain int."""
    if isinstance(v, Sym) and v.op == "add" and not isinstance(v.args[1], Sym):
        return v.args[0], int(v.args[1])
    return v, 0


def _is(v: SymInt, n: int) -> bool:
    return not isinstance(v, Sym) and int(v) == n


def sym_max(a: SymInt, b: SymInt) -> SymInt:
    return binary("max", a, b)


def sym_min(a: SymInt, b: SymInt) -> SymInt:
    return binary("min", a, b)


def ceil_div(a: SymInt, b: SymInt) -> SymInt:
    return -((-a) // b)


def numel(dims: Iterable[SymInt]) -> SymInt:
    """The product of sizes: a number, or an expression when one is flexible."""
    n: SymInt = 1
    for d in dims:
        n = n * d
    return n


def hint(v: SymInt) -> int:
    """The value for the example inputs."""
    return v.hint if isinstance(v, Sym) else int(v)


def hints(values: Sequence[SymInt]) -> tuple[int, ...]:
    return tuple(hint(v) for v in values)


def is_static(v: object) -> bool:
    return not isinstance(v, Sym)


def all_static(values: Sequence[object]) -> bool:
    return not any(isinstance(v, Sym) for v in values)


def program(v: SymInt) -> list[int]:
    """The postfix program that computes ``v`` from the real input shapes."""
    out: list[int] = []

    def emit(x: SymInt) -> None:
        if not isinstance(x, Sym):
            out.extend((CONST, int(x)))
        elif x.op == "dim":
            out.extend((DIM, int(x.args[0]), int(x.args[1])))
        else:
            emit(x.args[0])
            emit(x.args[1])
            out.append(_BINARY[x.op][0])

    emit(v)
    return out


def evaluate(prog: Sequence[int], shapes: Sequence[Sequence[int]]) -> int:
    """Runs a program on input shapes (the Python twin of the wrapper's TorchScript loop)."""
    stack: list[int] = []
    i = 0
    while i < len(prog):
        code = prog[i]
        if code == CONST:
            stack.append(int(prog[i + 1]))
            i += 2
        elif code == DIM:
            stack.append(int(shapes[prog[i + 1]][prog[i + 2]]))
            i += 3
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(_BY_CODE[code](a, b))
            i += 1
    if len(stack) != 1:
        raise ValueError(f"malformed shape program {list(prog)}")
    return stack[0]
