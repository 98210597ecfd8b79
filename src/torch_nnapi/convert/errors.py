"""Errors of the converter.

A lowering that cannot express a node raises :class:`Unsupported`; the converter collects
every such failure (and every op kind without a lowering) and raises one
:class:`ConversionError` that lists them all, grouped by op kind, with counts and source
locations, so a user sees the whole list of work at once instead of one op per attempt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..nnapi.errors import counted

if TYPE_CHECKING:
    from .levels import OperationLevel

_CAUSE = re.compile(r"^(?:builtins\.)?[A-Za-z_.]*(?:Error|Exception): (.*)$")


def one_line(error: BaseException) -> str:
    """An exception's message as one line. TorchScript errors carry the script's traceback
    first and the cause last (``builtins.ValueError: input 0 has shape ...``): the cause,
    without its exception type, is kept."""
    text = str(error).strip() or type(error).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and ("Traceback" in text or "TorchScript" in text):
        cause = _CAUSE.match(lines[-1])
        return cause.group(1) if cause else lines[-1]
    return " ".join(lines)


def first_line(error: BaseException) -> str:
    """An exception's first line: PyTorch's own errors (torch.export's, the tracer's) run
    to paragraphs, with tensors printed in full."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip() if lines else type(error).__name__


class CaptureError(ValueError):
    """The model cannot be captured as asked: torch.export fails on it, a flexible dimension
    the model fixes, a front-end that does not fit the model."""


class Unsupported(Exception):
    """Raised by a lowering: this node cannot be expressed in NNAPI (feature level 3)."""


@dataclass
class UnsupportedUse:
    kind: str
    reason: str
    location: str


@dataclass
class ConversionError(Exception):
    """The model uses operations (or operation parameters) the converter cannot express."""

    uses: list[UnsupportedUse] = field(default_factory=list)
    hint: str = ""  # a last line: what would make the model convert

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def with_hint(self, hint: str) -> ConversionError:
        """The same error, its message ending with ``hint``."""
        self.hint = hint
        self.args = (self.render(),)
        return self

    def _hinted(self, lines: list[str]) -> str:
        return "\n".join(lines + ([self.hint] if self.hint else []))

    def by_kind(self) -> dict[str, list[UnsupportedUse]]:
        grouped: dict[str, list[UnsupportedUse]] = {}
        for use in self.uses:
            grouped.setdefault(use.kind, []).append(use)
        return grouped

    def render(self, max_locations: int = 5) -> str:
        grouped = self.by_kind()
        lines = [f"cannot convert the model: {counted(len(grouped), 'unsupported operation')}"
                 f" ({counted(len(self.uses), 'use')})"]
        for kind, uses in sorted(grouped.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            reasons: dict[str, list[str]] = {}
            for use in uses:
                reasons.setdefault(use.reason, []).append(use.location)
            lines.append(f"  {kind} x{len(uses)}")
            for reason, locations in reasons.items():
                lines.append(f"    {reason}")
                for loc in locations[:max_locations]:
                    lines.append(f"      at {loc}")
                if len(locations) > max_locations:
                    lines.append(f"      ... and {len(locations) - max_locations} more")
        return self._hinted(lines)


@dataclass
class FeatureLevelError(ConversionError):
    """The converted model needs a higher NNAPI feature level than the one asked for
    (``convert(..., target_level=N)``). ``uses`` has one entry per NNAPI operation a
    device of the target level would reject (kind and location: the PyTorch node it comes
    from; reason: the NNAPI operation and why it needs more); the message groups them as
    ``torch-nnapi check --target-level`` does."""

    target_level: int = 0
    feature_level: int = 0
    operations: list[OperationLevel] = field(default_factory=list)  # above the target
    model_reasons: list[str] = field(default_factory=list)  # model-wide, above the target

    def render(self, max_locations: int | None = None) -> str:
        from .levels import describe_level, render_operations

        count = len(self.operations)
        lines = [f"the converted model needs NNAPI feature {describe_level(self.feature_level)},"
                 f" above the target {describe_level(self.target_level)}: a device of level"
                 f" {self.target_level} would reject {counted(count, 'operation')}"]
        lines += [f"  the model: {reason}" for reason in self.model_reasons]
        lines += render_operations(self.operations, self.target_level, max_locations)
        return self._hinted(lines)


class ConverterBug(RuntimeError):
    """An internal inconsistency (e.g. a lowering's shape disagrees with PyTorch's)."""
