"""Will a PyTorch model run on NNAPI, and correctly? (``torch-nnapi check``)

:func:`check_model` converts the model and gathers, without stopping at the first problem:

* every unsupported operation (from :class:`ConversionError`: kind, count, locations);
* the feature level the converted model needs and *why* (``levels.py``): for each NNAPI
  operation, which part of its signature needs that level (the operation itself, its
  operand types, optional inputs such as the layout flag, or a quantization rule), with the
  PyTorch code it came from; and, for ``target_level``, every operation a device of that
  level would reject;
* operation counts and the TRANSPOSE operations the converter inserted to change layouts;
* in a quantized model, the float islands (operations NNAPI computes in float between
  DEQUANTIZE and QUANTIZE) with the PyTorch ops they come from and why they are float;
* the converted module run through PyTorch's NNAPI runtime against eager PyTorch, and a
  layer-by-layer comparison on the host runtime naming the first layer whose error exceeds
  the tolerance (float: relative to the layer's magnitude; quantized: in quanta).

The reference is not taken on trust: for a quantized model, every output and layer is also
compared with what another of PyTorch's quantized engines computes (a layer from that
engine's own values of its inputs, see ``compare.py``). A tensor over the tolerance against
the first reference but within it against the second, whose two references disagree with
each other, is reported as "reference disagrees", not as a mismatch of the conversion. ``isolated``
feeds each layer PyTorch's own input (see ``compare.py``), so that drift accumulated along a
deep quantized network is not taken for a broken layer.

With ``fallback=True`` a model that does not convert whole is partitioned: the report then
also holds the :class:`~.fallback.PartitionReport` (regions, CPU nodes and why, boundary
tensors), and its levels, counts and transposes cover every region.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from ...nnapi.codes import FeatureLevel, OperandType
from ...nnapi.model import Model
from ..api import Conversion, convert_with_details
from ..capture.frontend import example_inputs_of
from ..capture.script import alternate_engine, quantized_engine
from ..errors import ConversionError, ConverterBug, UnsupportedUse, one_line
from ..fallback.convert import PartitionedConversion, output_quantum
from ..fallback.report import PartitionReport
from ..levels import (
    OperationLevel,
    Requirement,
    above,
    model_requirements,
    operation_levels,
    origin_of,
)
from ..options import Flexible, NhwcRequest
from ..pipeline.lowerer import dequantized_scale
from .compare import LayerDiff, compare_layers

FLOAT_TOLERANCE = 1e-4  # relative to the magnitude of the layer or output
# Quantized tensors (and float tensors dequantized from them), in quanta. PyTorch's quantized
# kernels and NNAPI's round differently, by up to one quantum per layer, and those
# differences add up along a network (3 quanta after MobileNetV2's 50 layers, 5 after
# ResNet-18's residual additions); a wrong conversion is off by tens or hundreds.
QUANTA_TOLERANCE = 8.0
_FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


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


@dataclass
class TensorCheck:
    """One compared tensor: a model output or an intermediate layer."""

    name: str
    shape: list[int]
    error: float
    unit: str  # "relative" or "quanta"
    tolerance: float
    kind: str = ""
    location: str = ""
    alternate_error: float | None = None  # against the other quantized engine's reference
    reference_gap: float | None = None  # between the two references

    @property
    def within(self) -> bool:
        return bool(self.error <= self.tolerance)

    @property
    def reference_disagrees(self) -> bool:
        """Over the tolerance against the reference, within it against the other engine's,
        and the two references differ by more than the tolerance: PyTorch's problem."""
        return bool(not self.within and self.alternate_error is not None
                    and self.alternate_error <= self.tolerance
                    and (self.reference_gap or 0.0) > self.tolerance)

    @property
    def ok(self) -> bool:
        """Not a fault of the conversion."""
        return self.within or self.reference_disagrees

    @property
    def verdict(self) -> str:
        if self.within:
            return "ok"
        return "reference disagrees" if self.reference_disagrees else "MISMATCH"

    def value(self) -> str:
        return f"{self.error:g} quanta" if self.unit == "quanta" else \
            f"{self.error:.2g} relative"

    def limit(self) -> str:
        return f"{self.tolerance:g} quanta" if self.unit == "quanta" else f"{self.tolerance:g}"

    def describe(self, engines: tuple[str, str] = ("", "")) -> str:
        """``3 quanta (tolerance 8 quanta) ok``, with the other reference when it decides."""
        text = f"{self.value()} (tolerance {self.limit()}) {self.verdict}"
        if self.reference_disagrees:
            first, second = engines
            unit = " quanta" if self.unit == "quanta" else " relative"
            text += (f": {self.alternate_error:g}{unit} from PyTorch's"
                     f" {second or 'other'} kernels, whose result differs from"
                     f" {first or 'the reference'}'s by {self.reference_gap:g}{unit}")
        return text

    @property
    def severity(self) -> float:
        """The error as a multiple of its tolerance (comparable across units)."""
        return self.error / self.tolerance if self.tolerance else float("inf")


@dataclass
class CheckReport:
    inputs: list[dict[str, Any]]  # per input: shape, dtype (and nhwc once converted)
    unsupported: list[UnsupportedUse] = field(default_factory=list)
    unsupported_text: str = ""
    errors: list[str] = field(default_factory=list)  # converter bugs, runtime failures
    converted: bool = False
    feature_level: int = 0
    model_requirements: list[Requirement] = field(default_factory=list)
    operations: list[OperationLevel] = field(default_factory=list)
    operation_counts: dict[str, int] = field(default_factory=dict)
    transposes: list[Transpose] = field(default_factory=list)
    float_islands: list[FloatIsland] = field(default_factory=list)
    backend: str = ""
    outputs: list[TensorCheck] = field(default_factory=list)
    layers: list[TensorCheck] = field(default_factory=list)
    float_tolerance: float = FLOAT_TOLERANCE
    quanta_tolerance: float = QUANTA_TOLERANCE
    target_level: int | None = None
    conversion_seconds: float = 0.0
    quantized: bool = False  # the converted model has quantized operands
    quantized_types: list[str] = field(default_factory=list)  # "uint8" and/or "int8"
    quantized_engine: str = ""  # PyTorch's quantized engine for the eager reference
    alternate_engine: str = ""  # the other engine the reference is checked against
    isolated: bool = False  # each layer computed from PyTorch's own inputs
    input_error: str = ""  # the model does not take the given inputs
    partition: PartitionReport | None = None  # with fallback, a partitioned model's

    @property
    def engines(self) -> tuple[str, str]:
        return self.quantized_engine, self.alternate_engine

    @property
    def disagreements(self) -> list[TensorCheck]:
        """Outputs and layers where PyTorch's references disagree (not the conversion)."""
        return [t for t in self.outputs + self.layers if t.reference_disagrees]

    @property
    def level_forced_by(self) -> list[OperationLevel]:
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
    def first_bad_layer(self) -> TensorCheck | None:
        return next((layer for layer in self.layers if not layer.ok), None)

    def worst_layers(self, count: int = 5) -> list[TensorCheck]:
        return sorted(self.layers, key=lambda t: -t.severity)[:count]

    @property
    def matches(self) -> bool:
        return bool(self.converted and not self.errors and self.outputs
                    and all(o.ok for o in self.outputs) and all(t.ok for t in self.layers))

    @property
    def fits_target(self) -> bool:
        return not self.rejected and not self.rejected_by_model

    @property
    def exit_code(self) -> int:
        """The CLI's exit codes (cli/_errors.py): 0 converts, matches and fits the target
        level; 1 cannot convert; 2 converts but disagrees with PyTorch or fails to run; 3 a
        target-level device rejects it; 4 the model does not take the given inputs."""
        if self.input_error:
            return 4
        if not self.converted:
            return 1
        if not self.matches:
            return 2
        return 0 if self.fits_target else 3

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("outputs", "layers"):
            for entry, check in zip(data[name], getattr(self, name), strict=False):
                entry["verdict"] = check.verdict
        data.update(
            ok=self.exit_code == 0, exit_code=self.exit_code,
            level_forced_by=[asdict(op) for op in self.level_forced_by],
            rejected=[asdict(op) for op in self.rejected],
            rejected_by_model=[asdict(r) for r in self.rejected_by_model],
            first_bad_layer=asdict(self.first_bad_layer) if self.first_bad_layer else None,
            worst_layers=[asdict(t) for t in self.worst_layers()])
        if self.feature_level:
            level = FeatureLevel(self.feature_level)
            data.update(android=level.android, api_level=level.api_level)
        return data


# ------------------------------------------------------------------------------ levels


def layout_transposes(model: Model, origins: Mapping[int, object] | None = None
                      ) -> list[Transpose]:
    """Every TRANSPOSE: the converter emits one only where an operation needs its input in
    another order than the one it holds (permutes themselves only relabel dimensions)."""
    found = []
    for k, operation in enumerate(model.operations):
        if operation.type.name != "TRANSPOSE":
            continue
        data, perm = operation.inputs[0], operation.inputs[1]
        value = model.operands[perm].value
        permutation = [int(v) for v in np.asarray(value).reshape(-1)] if value is not None \
            else []
        found.append(Transpose(k, permutation, list(model.operands[data].dimensions),
                               origin_of(model, origins or {}, k)))
    return found


def quantized_types(model: Model) -> list[str]:
    """The 8-bit activation types of a model: "uint8" (TENSOR_QUANT8_ASYMM) and/or "int8"
    (TENSOR_QUANT8_ASYMM_SIGNED, a model quantized for feature level 4)."""
    present = {o.type for o in model.operands}
    return [name for name, t in (("uint8", OperandType.TENSOR_QUANT8_ASYMM),
                                 ("int8", OperandType.TENSOR_QUANT8_ASYMM_SIGNED))
            if t in present]


def float_islands(model: Model, origins: Mapping[int, object], level: int
                  ) -> list[FloatIsland]:
    """The float operations of a quantized model (DEQUANTIZE and QUANTIZE, their borders,
    excluded), grouped by the float operands connecting them, each
    with the PyTorch nodes they come from and why those run in float at ``level``."""
    from ..quant_policy import float_reason

    def is_float(operand: int) -> bool:
        return model.operands[operand].type in _FLOAT_TYPES

    computing = [k for k, op in enumerate(model.operations)
                 if op.type.name not in ("DEQUANTIZE", "QUANTIZE")
                 and any(is_float(o) for o in op.outputs)]
    group = {k: k for k in computing}

    def root(k: int) -> int:
        while group[k] != k:
            group[k] = group[group[k]]
            k = group[k]
        return k

    writer = {o: k for k in computing for o in model.operations[k].outputs}
    for k in computing:
        for operand in model.operations[k].inputs:
            if operand in writer and is_float(operand):
                group[root(k)] = root(writer[operand])
    islands: dict[int, list[int]] = {}
    for k in computing:
        islands.setdefault(root(k), []).append(k)
    result = []
    for members in islands.values():
        counts = Counter(model.operations[k].type.name for k in members)
        sources, seen = [], set()
        for k in members:
            node = origins.get(model.operations[k].outputs[0])
            key = (getattr(node, "kind", "?"), getattr(node, "location", ""))
            if key not in seen:
                seen.add(key)
                sources.append({"kind": key[0], "location": key[1],
                                "reason": float_reason(key[0], level)})
        result.append(FloatIsland(dict(counts.most_common()), sources))
    return result


# ------------------------------------------------------------------------------ numbers


def tensor_error(actual: torch.Tensor, expected: torch.Tensor, quantum: float = 0.0
                 ) -> tuple[float, str]:
    """(error, unit): quantized tensors in quanta, float tensors in ``quantum`` units when
    given (a dequantized output), else relative to the expected tensor's largest magnitude."""
    if expected.is_quantized:
        got = actual.int_repr() if actual.is_quantized else torch.quantize_per_tensor(
            actual.float(), expected.q_scale(), expected.q_zero_point(), expected.dtype
        ).int_repr()
        diff = (got.long() - expected.int_repr().long()).abs()
        return (float(diff.max()) if diff.numel() else 0.0), "quanta"
    a = (actual.dequantize() if actual.is_quantized else actual).double()
    e = expected.double()
    if not e.numel():
        return 0.0, "quanta" if quantum else "relative"
    if quantum:
        return round(float((a - e).abs().max()) / quantum, 3), "quanta"
    scale = max(float(e.abs().max()), 1e-30)
    return float((a - e).abs().max()) / scale, "relative"


def _as_list(out: object) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _tolerance(unit: str, report: CheckReport) -> float:
    return report.quanta_tolerance if unit == "quanta" else report.float_tolerance


def _layer(diff: LayerDiff, report: CheckReport) -> TensorCheck:
    return TensorCheck(f"%{diff.name}", list(diff.shape), diff.error, diff.unit,
                       _tolerance(diff.unit, report), diff.kind, diff.location,
                       diff.alternate_error, diff.reference_gap)


# ------------------------------------------------------------------------------ the check


Progress = Callable[[str], None]


def check_model(model: torch.nn.Module | torch.export.ExportedProgram,
                example_inputs: object = None, *, capture: str | None = None,
                nhwc: NhwcRequest = None, flexible: Flexible = None,
                float_tolerance: float = FLOAT_TOLERANCE,
                quanta_tolerance: float = QUANTA_TOLERANCE, target_level: int | None = None,
                host: bool = False, layers: bool = True, engine: str | None = "qnnpack",
                isolated: bool = False, progress: Progress | None = None,
                **fallback: Any) -> CheckReport:
    """Converts ``model`` for ``example_inputs`` and checks the result; see the module
    docstring. ``host`` runs the converted module on the host runtime instead of PyTorch's
    NNAPI runtime; ``layers=False`` skips the layer-by-layer comparison, ``isolated`` feeds
    each layer PyTorch's own input. ``engine`` is the PyTorch quantized engine computing the
    eager reference of quantized models: qnnpack by default, the one PyTorch Mobile uses
    (models quantized for it can saturate fbgemm's 16-bit accumulations on x86, giving wrong
    reference values). ``progress`` is told what is being done, step by step. ``fallback``:
    ``fallback=True`` and its knobs, as ``convert`` takes them (with ``target_level``, the
    operations a device of that level would reject then run on the CPU). ``capture``
    chooses the front-end as for ``convert`` (an ExportedProgram is always exported)."""
    examples = example_inputs_of(model, example_inputs)
    report = CheckReport([{"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
                          for x in examples], float_tolerance=float_tolerance,
                         quanta_tolerance=quanta_tolerance, target_level=target_level,
                         isolated=isolated)
    if engine == "qnnpack" and engine not in torch.backends.quantized.supported_engines:
        engine = None  # a PyTorch built without qnnpack: keep its default
    with quantized_engine(engine):
        report.quantized_engine = torch.backends.quantized.engine
        _check(report, model, examples, dict(capture=capture, nhwc=nhwc, flexible=flexible),
               host, layers, progress or (lambda step: None), fallback)
    return report


def _check(report: CheckReport, model: torch.nn.Module | torch.export.ExportedProgram,
           examples: tuple[torch.Tensor, ...], options: dict[str, Any], host: bool,
           layers: bool, progress: Progress, fallback: dict[str, Any]) -> None:
    progress("running the model in PyTorch")
    try:
        expected = _eager(model, examples)
    except Exception as e:  # noqa: BLE001 - the inputs do not fit the model
        shapes = ", ".join(f"{entry['shape']} {entry['dtype']}" for entry in report.inputs)
        report.input_error = f"the model fails on inputs {shapes}: {one_line(e)}"
        return
    progress("converting")
    try:
        converting = dict(options, **fallback)
        if fallback.get("fallback"):
            converting["target_level"] = report.target_level
        conversion = convert_with_details(model, examples, **converting)
    except ConversionError as e:
        report.unsupported = list(e.uses)
        report.unsupported_text = e.render()
        return
    except (ConverterBug, ValueError, TypeError) as e:
        report.errors.append(f"conversion failed: {e}")
        return
    report.converted = True
    if isinstance(conversion, PartitionedConversion):
        _describe_partitioned(report, conversion)
        progress("running the converted model")
        _check_outputs(report, expected, conversion, examples, host, None, model)
        return  # the layer-by-layer comparison needs the whole model in one NNAPI model
    _describe(report, conversion)
    report.quantized = any(o.info.is_quantized for o in conversion.model.operands)
    alternate = alternate_engine() if report.quantized else None
    report.alternate_engine = alternate or ""
    progress("running the converted model")
    _check_outputs(report, expected, conversion, examples, host, alternate, model)
    if layers:
        progress("comparing layer by layer" + (" (isolated)" if report.isolated else ""))
        try:
            diffs = compare_layers(model, examples, alternate=alternate,
                                   isolated=report.isolated, **options)
        except Exception as e:  # noqa: BLE001 - reported, the rest of the check stands
            report.errors.append(f"layer-by-layer comparison failed: {one_line(e)}")
        else:
            report.layers = [_layer(d, report) for d in diffs]


def _eager(model: torch.nn.Module | torch.export.ExportedProgram,
           examples: tuple[torch.Tensor, ...]) -> list[Any]:
    if isinstance(model, torch.export.ExportedProgram):
        model = model.module()
    with torch.no_grad():
        return _as_list(model(*[x.clone() for x in examples]))


def _describe(report: CheckReport, conversion: Conversion) -> None:
    model = conversion.model
    origins = conversion.lowered.cx.origins
    report.conversion_seconds = conversion.seconds
    report.feature_level = conversion.feature_level
    report.model_requirements = model_requirements(model)
    report.operations = operation_levels(model, origins)
    report.operation_counts = dict(Counter(op.type.name for op in model.operations)
                                   .most_common())
    report.transposes = layout_transposes(model, origins)
    report.quantized_types = quantized_types(model)
    if report.quantized_types:
        report.float_islands = float_islands(model, origins, report.target_level
                                             or report.feature_level)
    for entry, spec in zip(report.inputs, conversion.lowered.specs, strict=False):
        entry["nhwc"] = bool(spec.nhwc)  # the order NNAPI takes the input in


def _describe_partitioned(report: CheckReport, conversion: PartitionedConversion) -> None:
    """Levels, counts and transposes over every region, and the partition itself."""
    report.conversion_seconds = conversion.seconds
    report.partition = conversion.report
    report.feature_level = conversion.feature_level
    counts: Counter[str] = Counter()
    for region in conversion.regions:
        cx = region.result.cx
        report.model_requirements += [r for r in model_requirements(cx.model)
                                      if r not in report.model_requirements]
        report.operations += operation_levels(cx.model, cx.origins)
        report.transposes += layout_transposes(cx.model, cx.origins)
        counts.update(op.type.name for op in cx.model.operations)
        report.quantized = report.quantized or any(o.info.is_quantized
                                                   for o in cx.model.operands)
        report.quantized_types = sorted(set(report.quantized_types)
                                        | set(quantized_types(cx.model)), reverse=True)
    report.operation_counts = dict(counts.most_common())


def _check_outputs(report: CheckReport, expected: list[Any],
                   conversion: Conversion | PartitionedConversion,
                   examples: tuple[torch.Tensor, ...], host: bool, alternate: str | None,
                   model: torch.nn.Module | torch.export.ExportedProgram) -> None:
    from .host import run_on_host

    module = conversion.module
    report.backend = "host runtime" if host else "PyTorch's NNAPI runtime"
    try:
        with torch.no_grad():
            actual = _as_list(run_on_host(module, *examples) if host else module(*examples))
    except Exception as e:  # noqa: BLE001 - reported, the rest of the check stands
        report.errors.append(f"running the converted module ({report.backend}) failed:"
                             f" {one_line(e)}")
        return
    library = loaded_nnapi_library()
    if not host and library:
        report.backend += f" ({library})"
    other = None
    if alternate is not None:
        try:
            with quantized_engine(alternate):
                other = _eager(model, examples)
        except Exception:  # noqa: BLE001 - without a second reference, the first stands
            other = None
    report.outputs, errors = compare_outputs(actual, expected, conversion,
                                             report.float_tolerance, report.quanta_tolerance,
                                             other)
    report.errors.extend(errors)


def compare_outputs(actual: Sequence[torch.Tensor], expected: Sequence[torch.Tensor],
                    conversion: Conversion | PartitionedConversion,
                    float_tolerance: float = FLOAT_TOLERANCE,
                    quanta_tolerance: float = QUANTA_TOLERANCE,
                    alternate: Sequence[torch.Tensor] | None = None
                    ) -> tuple[list[TensorCheck], list[str]]:
    """Each converted output against PyTorch's (and ``alternate``, the outputs another
    quantized engine computes): the checks, and the errors that prevent a comparison."""
    actual, expected = _as_list(actual), _as_list(expected)
    if len(actual) != len(expected):
        return [], [f"the converted module returned {len(actual)} outputs, PyTorch"
                    f" {len(expected)}"]
    checks, errors = [], []
    for i, (a, e) in enumerate(zip(actual, expected, strict=False)):
        if tuple(a.shape) != tuple(e.shape):
            errors.append(f"output {i} has shape {list(a.shape)}, PyTorch's {list(e.shape)}")
            continue
        quantum = output_quantum(conversion, i) if isinstance(
            conversion, PartitionedConversion) else dequantized_scale(conversion.lowered, i)
        error, unit = tensor_error(a, e, quantum)
        check = TensorCheck(f"output {i}", list(e.shape), error, unit,
                            quanta_tolerance if unit == "quanta" else float_tolerance)
        other = _as_list(alternate)[i] if alternate is not None else None
        if isinstance(other, torch.Tensor) and other.shape == e.shape:
            check.alternate_error = tensor_error(a, other, quantum)[0]
            check.reference_gap = tensor_error(other, e, quantum)[0]
        checks.append(check)
    return checks, errors


def loaded_nnapi_library() -> str:
    """The path of the libneuralnetworks.so this process has loaded ("" if none)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith("libneuralnetworks.so"):
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return ""


__all__ = ["CheckReport", "FloatIsland", "OperationLevel", "Requirement", "TensorCheck",
           "Transpose", "check_model", "compare_outputs", "float_islands", "layout_transposes",
           "loaded_nnapi_library", "model_requirements", "operation_levels", "quantized_engine",
           "tensor_error"]
