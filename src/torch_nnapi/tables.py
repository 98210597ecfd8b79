"""Markdown tables for the README, rendered from the registries so the docs cannot drift.

`tools/update_readme.py` writes them between ``<!-- BEGIN name -->`` / ``<!-- END name -->``
markers; a test checks the README is current.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from .conformance.spec import CtsTest
from .nnapi.codes import FeatureLevel, OperandType, OperationType
from .nnapi.operand_types import OPERAND_TYPES
from .nnapi.signatures import ANY, SIGNATURES

_TYPE_LABELS = {
    OperandType.TENSOR_FLOAT32: "float32",
    OperandType.TENSOR_FLOAT16: "float16",
    OperandType.TENSOR_INT32: "int32",
    OperandType.TENSOR_QUANT8_ASYMM: "quant8",
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "quant8 signed",
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
    signature = SIGNATURES[op]
    if any(a.type_ref == ANY for f in signature.forms for a in f.inputs):
        return "any (as the models it calls take)"
    parts = []
    for level, types in sorted(SIGNATURES[op].operand_types_by_level().items()):
        labels = ", ".join(_TYPE_LABELS.get(t, t.name.lower()) for t in types)
        parts.append(labels if level == int(op.feature_level) else f"{labels} (since {level})")
    return "; ".join(parts)


def cts_counts(tests: Iterable[tuple[str, CtsTest]],
               known_failures: Iterable[str]) -> tuple[Counter[str], Counter[str]]:
    """Per operation name: the CTS tests (id, test) whose model, or a model it calls, uses
    it, and those expected to pass.

    Every test not listed as a known failure is asserted to pass by the test suite, so
    "passing" here is what the suite verifies on each run.
    """
    known = set(known_failures)
    total: Counter[str] = Counter()
    passing: Counter[str] = Counter()
    for test_id, test in tests:
        spec_model, _ = test.load()
        models = [spec_model, *spec_model.get("referenced", [])]
        for op in {operation["type"] for m in models for operation in m["operations"]}:
            total[op] += 1
            passing[op] += test_id not in known
    return total, passing


def operation_table(tests: Iterable[tuple[str, CtsTest]] | None = None,
                    known_failures: Iterable[str] = ()) -> str:
    """One row per NNAPI operation: code, feature level, data types, host support, CTS."""
    from .runtime import kernel_for

    counts = cts_counts(tests, known_failures) if tests is not None else None
    header = "| Operation | Code | Feature level | Data types | Host kernel | CTS passed |"
    rows = [header, "|" + "---|" * 6]
    for op in OperationType:
        types = _types_by_level(op) if op in SIGNATURES else "(no signature)"
        kernel = "yes" if kernel_for(op) is not None else "no"
        cts = "-" if counts is None or not counts[0][op.name] else \
            f"{counts[1][op.name]}/{counts[0][op.name]}"
        rows.append(f"| {op.name} | {int(op)} | {_level(op.feature_level)} | {types} |"
                    f" {kernel} | {cts} |")
    return "\n".join(rows)


def operand_type_table() -> str:
    rows = ["| Operand type | Code | Feature level | Element | Quantization |",
            "|---|---|---|---|---|"]
    for t, info in OPERAND_TYPES.items():
        kind = "scalar" if info.is_scalar else "tensor"
        element = "a reference to a model" if info.is_model else f"{kind} of {info.dtype.name}"
        rows.append(f"| {t.name} | {int(t)} | {_level(info.feature_level)} |"
                    f" {element} | {info.quant.value} |")
    return "\n".join(rows)


def c_function_table() -> str:
    """One row per function of libneuralnetworks.so: the API level that introduced it and what
    the library does (the header's comment)."""
    from .capi.api import FUNCTIONS

    rows = ["| Function | API level | Behaviour |", "|---|---|---|"]
    for f in sorted(FUNCTIONS, key=lambda f: (f.api_level, f.name)):
        rows.append(f"| `{f.name}` | {f.api_level} | {f.doc.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


MARKER = re.compile(r"(<!-- BEGIN (?P<name>[\w-]+) -->\n)(.*?)(<!-- END (?P=name) -->)", re.S)


def replace_sections(text: str, sections: Mapping[str, str]) -> str:
    """Replaces the body of each named marker section present in ``text``."""

    def sub(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in sections:
            return str(match.group(0))
        return f"{match.group(1)}{sections[name].rstrip()}\n{match.group(4)}"

    return MARKER.sub(sub, text)


def pytorch_op_table() -> str:
    """The converter's lowerings: PyTorch ops sharing a lowering and its NNAPI operations
    make one row (e.g. an op and its in-place variant). Needs torch."""
    from .convert.lowerings import load_all

    # (family, lowering function, NNAPI operations, notes) -> the PyTorch ops sharing them
    groups: dict[tuple[str, object, tuple[str, ...], str], list[str]] = {}
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


def readme_sections(tests: Iterable[tuple[str, CtsTest]] | None,
                    known_failures: Iterable[str]) -> dict[str, str]:
    """Every generated README section, by marker name; ``tests`` are the (id, test) CTS tests
    the suite runs, for the operation table's CTS column."""
    from .cli import exit_code_table

    return {
        "operations": operation_table(tests, known_failures),
        "operand-types": operand_type_table(),
        "c-functions": c_function_table(),
        "pytorch-ops": pytorch_op_table(),
        "exit-codes": exit_code_table(),
    }
