"""Which NNAPI feature level a converted model needs, and why.

For each operation of a finished model: the level it needs and every reason above level 1
(the operation itself, its operand types, optional inputs such as the layout flag, or a
quantization rule), with the PyTorch code it was lowered from. ``torch-nnapi check`` reports
these, and ``convert(..., target_level=N)`` raises :class:`~.errors.FeatureLevelError` with
the same text when a device of level N would reject the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..nnapi.codes import FeatureLevel, OperandType
from ..nnapi.model import Model
from ..nnapi.signatures import Form, LevelRule, RuleContext

MAX_ORIGINS = 3  # PyTorch origins listed per group of operations in reports


@dataclass
class Requirement:
    """One reason an operation needs a feature level."""

    level: int
    reason: str


@dataclass
class OperationLevel:
    """The feature level one NNAPI operation needs, with every reason above level 1."""

    index: int
    type: str
    level: int
    requirements: list[Requirement]
    origin: str = ""  # the PyTorch node it was lowered from, "" when unknown
    kind: str = ""  # that node's kind (e.g. "aten::exp"), "" when unknown
    location: str = ""  # and its source location

    def reasons_above(self, level: int) -> list[str]:
        return [r.reason for r in self.requirements if r.level > level]


def describe_origin(node: Any) -> str:
    if node is None:
        return "the model's outputs"
    return f"{node.kind} at {node.location}"


def origin_of(model: Model, origins: Mapping[int, Any], index: int) -> str:
    """The PyTorch node behind operation ``index`` ("" when no origin was recorded)."""
    outputs = model.operations[index].outputs
    if not outputs or outputs[0] not in origins:
        return ""
    return describe_origin(origins[outputs[0]])


def _node_of(model: Model, origins: Mapping[int, Any], index: int) -> tuple[str, str]:
    """(kind, location) of the PyTorch node behind operation ``index``."""
    outputs = model.operations[index].outputs
    if not outputs or outputs[0] not in origins:
        return "", ""
    node = origins[outputs[0]]
    return ("", "the model's outputs") if node is None else (node.kind, node.location)


def operation_levels(model: Model, origins: Mapping[int, Any] | None = None
                     ) -> list[OperationLevel]:
    """For each operation of a finished model: the level it needs and every reason above
    level 1, read from the signature match the model recorded when it was finished."""
    result = []
    for k, (operation, match) in enumerate(zip(model.operations, model.matches, strict=False)):
        requirements = []
        name = operation.type.name
        if int(match.signature.level) > 1:
            requirements.append(Requirement(int(match.signature.level),
                                            f"{name} was introduced at level"
                                            f" {int(match.signature.level)}"))
        if match.combo.level > max(1, int(match.signature.level)):
            requirements.append(Requirement(match.combo.level,
                                            f"{name} on {_combo_types(match.combo.bindings)}"
                                            f" needs level {match.combo.level}"))
        for level, names in _optional_argument_levels(match.form, match.input_positions):
            plural = len(names) > 1
            requirements.append(Requirement(level, f"{name}'s optional input"
                                            f"{'s' if plural else ''} {', '.join(names)}"
                                            f" need{'' if plural else 's'} level {level}"))
        context = RuleContext(model.operands, operation.inputs, operation.outputs, match)
        for rule in match.signature.rules:
            if isinstance(rule, LevelRule):
                needed = rule.needs(context)
                if needed and needed > 1:
                    requirements.append(Requirement(int(needed), f"{name}: {rule.description}"))
        result.append(OperationLevel(k, name, int(match.level), requirements,
                                     origin_of(model, origins or {}, k),
                                     *_node_of(model, origins or {}, k)))
    return result


def model_requirements(model: Model) -> list[Requirement]:
    """Requirements of the model as a whole rather than of one operation."""
    found = []
    half = sorted({o.type.name for o in model.operands
                   if o.type in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16)})
    if half:
        found.append(Requirement(3, f"float16 operands ({', '.join(half)}) need level 3"))
    if model.relax_float32_to_float16:
        found.append(Requirement(2, "relaxed float32 -> float16 computation needs level 2"))
    if any(o.type == OperandType.TENSOR_QUANT8_ASYMM_SIGNED for o in model.operands):
        found.append(Requirement(4, "signed 8-bit operands (TENSOR_QUANT8_ASYMM_SIGNED, a model"
                                    " quantized with target_level=4) need level 4; quantize"
                                    " with target_level=3 or lower for uint8"))
    return found


def above(operations: Sequence[OperationLevel], level: int) -> list[OperationLevel]:
    """The operations a device of feature level ``level`` would reject."""
    return [op for op in operations if op.level > level]


def render_operations(operations: Sequence[OperationLevel], level: int,
                      max_origins: int | None = MAX_ORIGINS) -> list[str]:
    """Operations grouped by type and by their reasons above ``level``, each group with
    the PyTorch code it came from (at most ``max_origins`` places; None: all)."""
    groups: dict[tuple[str, int, tuple[str, ...]], list[OperationLevel]] = defaultdict(list)
    for op in operations:
        groups[(op.type, op.level, tuple(op.reasons_above(level)))].append(op)
    lines = []
    for (name, needed, reasons), ops in sorted(groups.items(),
                                               key=lambda kv: (-len(kv[1]), kv[0][0])):
        lines.append(f"  {name} x{len(ops)} (level {needed}): {'; '.join(reasons)}")
        origins = list(dict.fromkeys(o.origin for o in ops if o.origin))
        shown = origins if max_origins is None else origins[:max_origins]
        for origin in shown:
            lines.append(f"      from {origin}")
        if len(origins) > len(shown):
            lines.append(f"      ... and {len(origins) - len(shown)} more")
    return lines


def describe_level(level: int) -> str:
    """``"level 3 (Android 10, API 29)"``."""
    fl = FeatureLevel(level)
    return f"level {int(fl)} (Android {fl.android}, API {fl.api_level})"


def _combo_types(bindings: Mapping[str, OperandType]) -> str:
    names = sorted({t.name for t in bindings.values()})
    return ", ".join(names)


def _optional_argument_levels(form: Form, positions: Mapping[str, list[int]]
                              ) -> list[tuple[int, list[str]]]:
    """The optional inputs an operation gives that need a level above 1, by level.

    A form's cut points record the level needed by every argument before them, so an
    argument needs the level of the first cut after it."""
    needed: dict[int, list[str]] = {}
    cuts = sorted(form.input_cuts, key=lambda c: c.length)
    for i, arg in enumerate(form.inputs):
        level = next((c.level for c in cuts if c.length > i), 1)
        if level > 1 and arg.name in positions:
            needed.setdefault(level, []).append(arg.name)
    return sorted(needed.items())


__all__ = ["MAX_ORIGINS", "OperationLevel", "Requirement", "above", "describe_level",
           "describe_origin", "model_requirements", "operation_levels", "origin_of",
           "render_operations"]
