"""The lowering registry: one small function per PyTorch op, grouped in one module per family.

A lowering is registered with ``@lowering("aten::relu", "aten::relu_", nnapi=("RELU",))``.
It receives the converter (``cx``) and the node's inputs, already resolved: tensors held by
the NNAPI model are :class:`~torch_nnapi.convert.builder.values.TensorValue`, constant
tensors are ``torch.Tensor``, numbers are ``int``/``float``/``bool`` or :class:`Sym` for
sizes that depend on flexible input dimensions, and lists are Python lists of those (the
type ``builder.context.Arg``; a parameter whose schema fixes its type is annotated with
that). It returns the node's output value (or a tuple of them), emitting NNAPI operations
through ``cx``.

Families share code only through the building blocks of ``builder/`` (``arithmetic.py``,
``slicing.py``, ``spatial.py``, ``common.py`` ...), never through one another: a lowering other
families need too is a thin registered function over a block. The quantized family is the
exception: it wraps the float families' tensor forms (quantized.py).

In-place variants (``aten::relu_``) share the function: the converter rebinds the mutated
input to the result, so later readers of the input see the new value.

A lowering registered with ``any_rank=True`` handles tensors of any rank, held in operands
whose dimensions may merge several PyTorch dimensions (``TensorValue.groups``, merged.py);
the driver hands the others operands with one dimension per PyTorch dimension, and reports a
tensor of rank above 4 reaching them as unsupported.

The registry is introspectable (``supported_ops()``): source op -> NNAPI ops, family, notes,
which is what the README's tables are generated from.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, TypeVar

from ...nnapi.codes import OperationType

if TYPE_CHECKING:  # (the registry itself imports no torch)
    from ..builder.context import Arg

# A lowering: (cx, *node inputs) -> the node's output value or a tuple of them
LoweringFn = Callable[..., "Arg"]
F = TypeVar("F", bound=LoweringFn)


@dataclass(frozen=True)
class Lowering:
    kind: str  # the TorchScript node kind, e.g. "aten::relu_"
    fn: LoweringFn
    family: str
    nnapi: tuple[str, ...]  # NNAPI operations this lowering may emit
    notes: str
    # True: takes tensors of any rank, whose NNAPI operands may merge dimensions
    # (TensorValue.groups); otherwise the driver hands it operands with one dimension per
    # PyTorch dimension and reports tensors of rank above 4 as unsupported
    any_rank: bool = False

    @property
    def in_place(self) -> bool:
        return is_in_place(self.kind)


LOWERINGS: dict[str, Lowering] = {}


def is_in_place(kind: str) -> bool:
    name = kind.split("::", 1)[-1]
    return name.endswith("_") and not name.endswith("__")


def lowering(*kinds: str, nnapi: tuple[str, ...] | list[str] = (), notes: str = "",
             family: str | None = None, any_rank: bool = False) -> Callable[[F], F]:
    """Registers the decorated function as the lowering of each TorchScript op in ``kinds``
    (``any_rank``: see :class:`Lowering`)."""
    for name in nnapi:
        OperationType[name]  # a typo in an NNAPI operation name fails at import

    def wrap(fn: F) -> F:
        fam = family or fn.__module__.rsplit(".", 1)[-1]
        for kind in kinds:
            if kind in LOWERINGS:
                raise ValueError(f"{kind} already has a lowering in {LOWERINGS[kind].family}")
            LOWERINGS[kind] = Lowering(kind, fn, fam, tuple(nnapi), notes, any_rank)
        return fn

    return wrap


_loaded = False


def load_all() -> dict[str, Lowering]:
    """Imports every family module (which registers its lowerings) and returns the table."""
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return LOWERINGS


def lowering_for(kind: str) -> Lowering | None:
    return load_all().get(kind)


class SupportedOp(TypedDict):
    """One row of :func:`supported_ops`."""

    op: str
    family: str
    nnapi: list[str]
    notes: str
    in_place: bool


def supported_ops() -> list[SupportedOp]:
    """One row per supported TorchScript op: kind, family, NNAPI ops, notes, in-place."""
    rows: list[SupportedOp] = []
    for kind, low in sorted(load_all().items(), key=lambda kv: (kv[1].family, kv[0])):
        rows.append({"op": kind, "family": low.family, "nnapi": list(low.nnapi),
                     "notes": low.notes, "in_place": low.in_place})
    return rows
