"""What ``torch-nnapi check`` found: a :class:`CheckReport` in four parts.

* :class:`ConversionFacts`: whether the model converts, what is unsupported, what it became
  (operation counts, inserted transposes, a partitioned model's regions and CPU nodes);
* :class:`LevelFacts`: the feature level it needs, why, and what a device of the target
  level would reject;
* :class:`QuantizationFacts`: its 8-bit types and float islands;
* :class:`Accuracy`: its outputs and layers against eager PyTorch (:class:`TensorCheck`).

``check.py`` fills the report; the CLI renders it as text, JSON (:meth:`CheckReport.to_json`,
flat, one key per fact) or HTML.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ...nnapi.codes import FeatureLevel
from ..errors import UnsupportedUse
from ..fallback.report import PartitionReport
from ..levels import OperationLevel, Requirement, above

FLOAT_TOLERANCE = 1e-4  # relative to the magnitude of the layer or output
# Quantized tensors (and float tensors dequantized from them), in quanta. PyTorch's quantized
# kernels and NNAPI's round differently, by up to one quantum per layer, and those
# differences add up along a network (3 quanta after MobileNetV2's 50 layers, 5 after
# ResNet-18's residual additions); a wrong conversion is off by tens or hundreds.
QUANTA_TOLERANCE = 8.0


@dataclass
class Transpose:
    """A TRANSPOSE the converter inserted because an operation needed another layout."""

    index: int
    permutation: list[int]
    input_shape: list[int]
    origin: str


@dataclass
class FloatIsland:
    """Connected float operations of a quantized model, and the PyTorch ops behind them."""

    operations: dict[str, int]  # NNAPI operation -> count
    sources: list[dict[str, str]]  # {"kind", "location", "reason"} per PyTorch node


# ------------------------------------------------------------------------------ tensors


@dataclass(frozen=True, kw_only=True)
class AlternateReference:
    """A tensor against what another of PyTorch's quantized engines computes."""

    error: float  # the converted tensor against the other engine's result
    gap: float  # between the two engines' results, in the same unit


@dataclass(kw_only=True)
class TensorCheck:
    """One compared tensor: a model output or an intermediate layer."""

    name: str
    shape: list[int]
    error: float
    unit: str  # "relative" or "quanta"
    tolerance: float
    kind: str = ""
    location: str = ""
    alternate: AlternateReference | None = None  # for a quantized model, when computed
    # a quantized layer over the tolerance in the accumulated comparison while every output
    # matches: rounding carried down the layers (Accuracy.mark_drift), not a broken layer
    drift: bool = False

    @property
    def within(self) -> bool:
        return bool(self.error <= self.tolerance)

    @property
    def reference_disagrees(self) -> bool:
        """Over the tolerance against the reference, within it against the other engine's,
        and the two references differ by more than the tolerance: PyTorch's problem."""
        return bool(not self.within and self.alternate is not None
                    and self.alternate.error <= self.tolerance
                    and self.alternate.gap > self.tolerance)

    @property
    def ok(self) -> bool:
        """Not a fault of the conversion."""
        return self.within or self.reference_disagrees or self.drift

    @property
    def verdict(self) -> str:
        if self.within:
            return "ok"
        if self.reference_disagrees:
            return "reference disagrees"
        return "drift" if self.drift else "MISMATCH"

    def value(self) -> str:
        return f"{self.error:g} quanta" if self.unit == "quanta" else \
            f"{self.error:.2g} relative"

    def limit(self) -> str:
        return f"{self.tolerance:g} quanta" if self.unit == "quanta" else f"{self.tolerance:g}"

    def describe(self, engines: tuple[str, str] = ("", "")) -> str:
        """``3 quanta (tolerance 8 quanta) ok``, with the other reference when it decides."""
        text = f"{self.value()} (tolerance {self.limit()}) {self.verdict}"
        if self.reference_disagrees and self.alternate is not None:
            first, second = engines
            unit = " quanta" if self.unit == "quanta" else " relative"
            text += (f": {self.alternate.error:g}{unit} from PyTorch's"
                     f" {second or 'other'} kernels, whose result differs from"
                     f" {first or 'the reference'}'s by {self.alternate.gap:g}{unit}")
        return text

    @property
    def severity(self) -> float:
        """The error as a multiple of its tolerance (comparable across units)."""
        return self.error / self.tolerance if self.tolerance else float("inf")

    def to_json(self) -> dict[str, Any]:
        """The check as plain data, the other reference's figures as ``alternate_error`` and
        ``reference_gap`` (None when there is none)."""
        alternate = self.alternate
        return {"name": self.name, "shape": list(self.shape), "error": self.error,
                "unit": self.unit, "tolerance": self.tolerance, "kind": self.kind,
                "location": self.location, "drift": self.drift,
                "alternate_error": None if alternate is None else alternate.error,
                "reference_gap": None if alternate is None else alternate.gap}


# ------------------------------------------------------------------------------ the parts


@dataclass(kw_only=True)
class ConversionFacts:
    """Whether the model converts, and what it converts into."""

    converted: bool = False
    unsupported: list[UnsupportedUse] = field(default_factory=list)
    unsupported_text: str = ""  # the ConversionError, rendered
    hint: str = ""  # what would make it convert (e.g. --fallback's regions), if anything
    seconds: float = 0.0  # the conversion's
    operation_counts: dict[str, int] = field(default_factory=dict)
    transposes: list[Transpose] = field(default_factory=list)
    partition: PartitionReport | None = None  # with fallback, a partitioned model's


@dataclass(kw_only=True)
class LevelFacts:
    """The NNAPI feature level the converted model needs, and why; what a device of the
    target level would reject."""

    feature_level: int = 0
    model_requirements: list[Requirement] = field(default_factory=list)
    operations: list[OperationLevel] = field(default_factory=list)
    target_level: int | None = None

    @property
    def forced_by(self) -> list[OperationLevel]:
        """The operations that need the model's feature level (none above 1 needs nothing)."""
        if self.feature_level <= 1:
            return []
        return [op for op in self.operations if op.level == self.feature_level]

    @property
    def rejected(self) -> list[OperationLevel]:
        """Operations a device of ``target_level`` would reject."""
        if self.target_level is None:
            return []
        return above(self.operations, self.target_level)

    @property
    def rejected_by_model(self) -> list[Requirement]:
        if self.target_level is None:
            return []
        return [r for r in self.model_requirements if r.level > self.target_level]

    @property
    def fits_target(self) -> bool:
        return not self.rejected and not self.rejected_by_model


@dataclass(kw_only=True)
class QuantizationFacts:
    """A quantized model's 8-bit types and the operations it computes in float."""

    quantized: bool = False  # the converted model has quantized operands
    types: list[str] = field(default_factory=list)  # "uint8" and/or "int8"
    float_islands: list[FloatIsland] = field(default_factory=list)


@dataclass(kw_only=True)
class Accuracy:
    """The converted model's outputs, and its layers on the host runtime, against eager
    PyTorch's."""

    backend: str = ""  # what ran the converted module
    outputs: list[TensorCheck] = field(default_factory=list)
    layers: list[TensorCheck] = field(default_factory=list)
    float_tolerance: float = FLOAT_TOLERANCE
    quanta_tolerance: float = QUANTA_TOLERANCE
    quantized_engine: str = ""  # PyTorch's quantized engine for the eager reference
    alternate_engine: str = ""  # the other engine the reference is checked against
    isolated: bool = False  # each layer computed from PyTorch's own inputs

    @property
    def engines(self) -> tuple[str, str]:
        return self.quantized_engine, self.alternate_engine

    def tolerance(self, unit: str) -> float:
        return self.quanta_tolerance if unit == "quanta" else self.float_tolerance

    @property
    def disagreements(self) -> list[TensorCheck]:
        """Outputs and layers where PyTorch's references disagree (not the conversion)."""
        return [t for t in self.outputs + self.layers if t.reference_disagrees]

    def mark_drift(self) -> None:
        """The verdict is the outputs': when every output matches, the quantized layers over
        the tolerance of an accumulated (not isolated) comparison are drift, each layer's
        rounding difference carried down the network, and do not fail the check."""
        if self.isolated or not self.outputs or not all(o.ok for o in self.outputs):
            return
        for layer in self.layers:
            if not layer.ok and layer.unit == "quanta":
                layer.drift = True

    @property
    def drifting(self) -> list[TensorCheck]:
        return [t for t in self.layers if t.verdict == "drift"]

    def drift_summary(self) -> str:
        """``5 quantized layers drift up to 11 quanta`` (empty: none)."""
        drifting = self.drifting
        if not drifting:
            return ""
        count = len(drifting)
        return (f"{count} quantized layer{'s' if count != 1 else ''} drift up to"
                f" {max(t.error for t in drifting):g} quanta")

    @property
    def first_bad_layer(self) -> TensorCheck | None:
        return next((layer for layer in self.layers if not layer.ok), None)

    def worst_layers(self, count: int = 5) -> list[TensorCheck]:
        return sorted(self.layers, key=lambda t: -t.severity)[:count]

    @property
    def agrees(self) -> bool:
        """Outputs were compared, and no output or layer is off by a fault of the
        conversion."""
        return bool(self.outputs and all(o.ok for o in self.outputs)
                    and all(t.ok for t in self.layers))


# ------------------------------------------------------------------------------ the report

# The keys of CheckReport.to_json, in order, before the derived ones.
_JSON_KEYS = ("inputs", "unsupported", "unsupported_text", "hint", "errors", "converted",
              "feature_level", "model_requirements", "operations", "operation_counts",
              "transposes", "float_islands", "backend", "outputs", "layers", "float_tolerance",
              "quanta_tolerance", "target_level", "conversion_seconds", "quantized",
              "quantized_types", "quantized_engine", "alternate_engine", "isolated",
              "input_error", "partition")


@dataclass(kw_only=True)
class CheckReport:
    inputs: list[dict[str, Any]]  # per input: shape, dtype (and nhwc once converted)
    input_error: str = ""  # the model does not take the given inputs
    errors: list[str] = field(default_factory=list)  # converter bugs, runtime failures
    conversion: ConversionFacts = field(default_factory=ConversionFacts)
    levels: LevelFacts = field(default_factory=LevelFacts)
    quantization: QuantizationFacts = field(default_factory=QuantizationFacts)
    accuracy: Accuracy = field(default_factory=Accuracy)

    @property
    def matches(self) -> bool:
        return bool(self.conversion.converted and not self.errors and self.accuracy.agrees)

    @property
    def exit_code(self) -> int:
        """The CLI's exit codes (cli/_errors.py): 0 converts, matches and fits the target
        level; 1 cannot convert; 2 converts but disagrees with PyTorch or fails to run; 3 a
        target-level device rejects it; 4 the model does not take the given inputs."""
        if self.input_error:
            return 4
        if not self.conversion.converted:
            return 1
        if not self.matches:
            return 2
        return 0 if self.levels.fits_target else 3

    def verdict(self) -> str:
        """The check's one-line result, as the text and the HTML report print it."""
        code = self.exit_code
        if code == 1:
            if self.conversion.unsupported:
                kinds = len({u.kind for u in self.conversion.unsupported})
                return f"result: FAIL, cannot convert ({kinds} unsupported operation" \
                       f"{'s' if kinds != 1 else ''})"
            return "result: FAIL, cannot convert"
        if code == 2:
            return "result: FAIL, the converted model does not match PyTorch"
        if code == 3:
            return (f"result: FAIL, converts and matches PyTorch, but needs feature level"
                    f" {self.levels.feature_level} (target {self.levels.target_level})")
        drift = self.accuracy.drift_summary()
        note = f" ({drift} carried down the layers while the outputs match; --isolated" \
            " compares each layer alone)" if drift else ""
        disagreements = self.accuracy.disagreements
        if disagreements:
            first, second = self.accuracy.engines
            note += (f" (PyTorch's {first} and {second} kernels disagree on"
                     f" {len(disagreements)} tensors; NNAPI agrees with one of them)")
        partition = self.conversion.partition
        parts = f" into {partition.summary()}" if partition is not None else ""
        return (f"result: OK, converts{parts} and matches PyTorch; needs NNAPI feature level"
                f" {self.levels.feature_level}{note}")

    def to_json(self) -> dict[str, Any]:
        """The report as plain data: one key per fact, whatever part holds it."""
        levels, accuracy = self.levels, self.accuracy
        facts = {**asdict(self.conversion), **asdict(levels), **asdict(self.quantization),
                 **asdict(accuracy)}
        facts.update(
            inputs=[dict(entry) for entry in self.inputs], errors=list(self.errors),
            input_error=self.input_error, conversion_seconds=facts.pop("seconds"),
            quantized_types=facts.pop("types"),
            outputs=[dict(t.to_json(), verdict=t.verdict) for t in accuracy.outputs],
            layers=[dict(t.to_json(), verdict=t.verdict) for t in accuracy.layers])
        data = {key: facts[key] for key in _JSON_KEYS}
        first_bad = accuracy.first_bad_layer
        data.update(
            ok=self.exit_code == 0, exit_code=self.exit_code,
            level_forced_by=[asdict(op) for op in levels.forced_by],
            rejected=[asdict(op) for op in levels.rejected],
            rejected_by_model=[asdict(r) for r in levels.rejected_by_model],
            first_bad_layer=first_bad.to_json() if first_bad else None,
            worst_layers=[t.to_json() for t in accuracy.worst_layers()])
        if levels.feature_level:
            level = FeatureLevel(levels.feature_level)
            data.update(android=level.android, api_level=level.api_level)
        return data


__all__ = ["FLOAT_TOLERANCE", "QUANTA_TOLERANCE", "Accuracy", "AlternateReference",
           "CheckReport", "ConversionFacts", "FloatIsland", "LevelFacts", "QuantizationFacts",
           "TensorCheck", "Transpose"]
