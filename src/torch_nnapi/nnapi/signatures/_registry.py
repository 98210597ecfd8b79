"""The table of operation signatures, filled by the family modules of this package."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..codes import OperationType
from ._dsl import Combo, Form, LevelRule, OperationSignature, Rule

SIGNATURES: dict[OperationType, OperationSignature] = {}


def define(
    operation: OperationType,
    *,
    forms: Sequence[Form],
    types: Iterable[Combo],
    rules: Sequence[Rule | LevelRule] = (),
    summary: str = "",
) -> OperationSignature:
    """Declares the signature of ``operation``; each operation is declared exactly once."""
    if operation in SIGNATURES:
        raise ValueError(f"signature of {operation.name} declared twice")
    combos = tuple(types)
    if not forms or not combos:
        raise ValueError(f"signature of {operation.name} needs at least one form and one combo")
    for f in forms:
        for arg in (*f.inputs, *f.outputs):
            if arg.type_ref[0].isupper():
                missing = [c for c in combos if arg.type_ref not in c.bindings]
                if missing:
                    raise ValueError(
                        f"{operation.name} form {f.name!r}: type variable {arg.type_ref} of"
                        f" {arg.name} is unbound in combination {missing[0].describe()}"
                    )
    sig = OperationSignature(operation, tuple(forms), combos, tuple(rules), summary)
    SIGNATURES[operation] = sig
    return sig
