"""Per-operation signatures of NNAPI operations, one module per operation family.

``SIGNATURES`` maps each OperationType to its declared OperationSignature; ``signature_of``
looks one up. Family modules are imported here so that importing the package fills the table.
The names other packages read (the runtime's argument binding, the quantizer's fixed output
quantizations, the README's tables) are exported here; ``_dsl`` and ``_rules`` stay private.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..codes import OperationType
from ._dsl import (
    ANY,
    Arg,
    Combo,
    Cut,
    Form,
    LevelRule,
    MatchFailure,
    OperationSignature,
    Rule,
    RuleContext,
    SignatureMatch,
    combo,
    form,
    level_rule,
    match_signature,
    rule,
)
from ._registry import SIGNATURES, define
from ._rules import FixedQuantRule


def _load_families() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_load_families()


def signature_of(operation: OperationType | int) -> OperationSignature:
    """The declared signature of an operation type; a clear error if there is none."""
    try:
        op = OperationType(operation)
    except ValueError:
        raise ValueError(f"unknown NNAPI operation type code {int(operation)}") from None
    try:
        return SIGNATURES[op]
    except KeyError:
        raise NotImplementedError(f"operation {op.name} has no declared signature") from None


__all__ = [
    "ANY",
    "Arg",
    "Combo",
    "Cut",
    "FixedQuantRule",
    "Form",
    "LevelRule",
    "MatchFailure",
    "OperationSignature",
    "Rule",
    "RuleContext",
    "SIGNATURES",
    "SignatureMatch",
    "combo",
    "define",
    "form",
    "level_rule",
    "match_signature",
    "rule",
    "signature_of",
]
