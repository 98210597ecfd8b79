"""Markdown tables for the README, rendered from the registries so the docs cannot drift.

`tools/update_readme.py` writes them between ``<!-- BEGIN name -->`` / ``<!-- END name -->``
markers; a test checks the README is current.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping

from .conformance.spec import discover
from .nnapi.codes import FeatureLevel, OperandType, OperationType
from .nnapi.operand_types import OPERAND_TYPES
from .nnapi.signatures import SIGNATURES

_TYPE_LABELS = {
    OperandType.TENSOR_FLOAT32: "float32",
    OperandType.TENSOR_FLOAT16: "float16",
    OperandType.TENSOR_INT32: "int32",
    OperandType.TENSOR_QUANT8_ASYMM: "quant8",
    OperandType.TENSOR_QUANT8_SYMM: "quant8 symm",
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: "quant8 per-channel",
    OperandType.TENSOR_QUANT16_ASYMM: "quant16 asymm",
    OperandType.TENSOR_QUANT16_SYMM: "quant16 symm",
    OperandType.TENSOR_BOOL8: "bool8",
}


def _level(level: int) -> str:
    fl = FeatureLevel(level)
    return f"{int(fl)} (Android {fl.android})"


def _types_by_level(op: OperationType) -> str:
    parts = []
    for level, types in sorted(SIGNATURES[op].operand_types_by_level().items()):
        labels = ", ".join(_TYPE_LABELS.get(t, t.name.lower()) for t in types)
        parts.append(labels if level == int(op.feature_level) else f"{labels} (since {level})")
    return "; ".join(parts)


def cts_counts(cts_dir: Path, known_failures: Iterable[str]) -> tuple[Counter, Counter]:
    """Per operation name: the CTS tests whose model uses it, and those expected to pass.

    Every test not listed as a known failure is asserted to pass by the test suite, so
    "passing" here is what the suite verifies on each run.
    """
    known = set(known_failures)
    total, passing = Counter(), Counter()
    for test in discover(cts_dir):
        spec_model, _ = test.load()
        for op in {operation["type"] for operation in spec_model["operations"]}:
            total[op] += 1
            passing[op] += test.id not in known
    return total, passing


def operation_table(cts_dir: Path | None = None, known_failures: Iterable[str] = ()) -> str:
    """One row per NNAPI operation: code, feature level, data types, host support, CTS."""
    from .runtime import kernel_for

    total = passing = None
    if cts_dir is not None:
        total, passing = cts_counts(cts_dir, known_failures)
    header = "| Operation | Code | Feature level | Data types | Host kernel | CTS passed |"
    rows = [header, "|" + "---|" * 6]
    for op in OperationType:
        types = _types_by_level(op) if op in SIGNATURES else "(no signature)"
        kernel = "yes" if kernel_for(op) is not None else "no"
        cts = "-" if total is None or not total[op.name] else \
            f"{passing[op.name]}/{total[op.name]}"
        rows.append(f"| {op.name} | {int(op)} | {_level(op.feature_level)} | {types} |"
                    f" {kernel} | {cts} |")
    return "\n".join(rows)


def operand_type_table() -> str:
    rows = ["| Operand type | Code | Feature level | Element | Quantization |", "|---|---|---|---|---|"]
    for t, info in OPERAND_TYPES.items():
        kind = "scalar" if info.is_scalar else "tensor"
        rows.append(f"| {t.name} | {int(t)} | {_level(info.feature_level)} |"
                    f" {kind} of {info.dtype.name} | {info.quant.value} |")
    return "\n".join(rows)


MARKER = re.compile(r"(<!-- BEGIN (?P<name>[\w-]+) -->\n)(.*?)(<!-- END (?P=name) -->)", re.S)


def replace_sections(text: str, sections: Mapping[str, str]) -> str:
    """Replaces the body of each named marker section present in ``text``."""

    def sub(match: re.Match) -> str:
        name = match.group("name")
        if name not in sections:
            return match.group(0)
        return f"{match.group(1)}{sections[name].rstrip()}\n{match.group(4)}"

    return MARKER.sub(sub, text)


def pytorch_op_table() -> str:
    """The converter's lowerings: PyTorch ops sharing a lowering and its NNAPI operations
    make one row (e.g. an op and its in-place variant). Needs torch."""
    from .convert.lowerings import load_all

    groups: dict[tuple, list[str]] = {}
    for kind, low in load_all().items():
        key = (low.family, low.fn, low.nnapi, low.notes)
        groups.setdefault(key, []).append(kind)
    rows = ["| Family | PyTorch ops | NNAPI operations | Notes |", "|---|---|---|---|"]
    for (family, _, nnapi, notes), kinds in sorted(groups.items(),
                                                   key=lambda kv: (kv[0][0], min(kv[1]))):
        ops = ", ".join(f"`{k}`" for k in sorted(kinds))
        rows.append(f"| {family} | {ops} | {', '.join(nnapi) or '(none: folded)'} |"
                    f" {notes.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


def readme_sections(cts_dir: Path | None, known_failures: Iterable[str]) -> dict[str, str]:
    """Every generated README section, by marker name."""
    from .cli._errors import exit_code_table

    return {
        "operations": operation_table(cts_dir, known_failures),
        "operand-types": operand_type_table(),
        "pytorch-ops": pytorch_op_table(),
        "exit-codes": exit_code_table(),
    }
