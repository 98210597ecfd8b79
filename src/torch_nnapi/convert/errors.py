"""Errors of the converter.

A lowering that cannot express a node raises :class:`Unsupported`; the converter collects
every such failure (and every op kind without a lowering) and raises one
:class:`ConversionError` that lists them all, grouped by op kind, with counts and source
locations, so a user sees the whole list of work at once instead of one op per attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def by_kind(self) -> dict[str, list[UnsupportedUse]]:
        grouped: dict[str, list[UnsupportedUse]] = {}
        for use in self.uses:
            grouped.setdefault(use.kind, []).append(use)
        return grouped

    def render(self, max_locations: int = 5) -> str:
        grouped = self.by_kind()
        lines = [f"cannot convert the model: {len(grouped)} unsupported operation"
                 f"{'s' if len(grouped) != 1 else ''} ({len(self.uses)} use"
                 f"{'s' if len(self.uses) != 1 else ''})"]
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
        return "\n".join(lines)


class ConverterBug(RuntimeError):
    """An internal inconsistency (e.g. a lowering's shape disagrees with PyTorch's)."""
