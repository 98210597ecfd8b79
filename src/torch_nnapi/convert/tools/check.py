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

The report and its parts are in ``check_report.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from ...nnapi.codes import OperandType
from ...nnapi.model import Model
from ..api import Conversion, convert_with_details
from ..capture.frontend import example_inputs_of
from ..capture.script import alternate_engine, quantized_engine
from ..errors import CaptureError, ConversionError, ConverterBug, one_line
from ..fallback.convert import PartitionedConversion, output_quantum
from ..levels import OperationLevel, Requirement, model_requirements, operation_levels, origin_of
from ..options import Flexible, NhwcRequest
from ..outputs import leaves_of, structure_of
from ..pipeline.lowerer import dequantized_scale
from .check_report import (
    FLOAT_TOLERANCE,
    QUANTA_TOLERANCE,
    Accuracy,
    AlternateReference,
    CheckReport,
    FloatIsland,
    LevelFacts,
    TensorCheck,
    Transpose,
)
from .compare import LayerDiff, compare_layers

_FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


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


def _layer(diff: LayerDiff, accuracy: Accuracy) -> TensorCheck:
    alternate = None
    if diff.alternate_error is not None and diff.reference_gap is not None:
        alternate = AlternateReference(error=diff.alternate_error, gap=diff.reference_gap)
    return TensorCheck(name=f"%{diff.name}", shape=list(diff.shape), error=diff.error,
                       unit=diff.unit, tolerance=accuracy.tolerance(diff.unit), kind=diff.kind,
                       location=diff.location, alternate=alternate)


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
    report = CheckReport(
        inputs=[{"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
                for x in examples],
        levels=LevelFacts(target_level=target_level),
        accuracy=Accuracy(float_tolerance=float_tolerance, quanta_tolerance=quanta_tolerance,
                          isolated=isolated))
    if engine == "qnnpack" and engine not in torch.backends.quantized.supported_engines:
        engine = None  # a PyTorch built without qnnpack: keep its default
    with quantized_engine(engine):
        report.accuracy.quantized_engine = torch.backends.quantized.engine
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
            converting["target_level"] = report.levels.target_level
        conversion = convert_with_details(model, examples, **converting)
    except ConversionError as e:
        report.conversion.unsupported = list(e.uses)
        report.conversion.unsupported_text = e.render()
        report.conversion.hint = e.hint
        return
    except (ConverterBug, ValueError, TypeError) as e:
        report.errors.append(f"conversion failed: {e}")
        return
    report.conversion.converted = True
    if isinstance(conversion, PartitionedConversion):
        _describe_partitioned(report, conversion)
        progress("running the converted model")
        _check_outputs(report, expected, conversion, examples, host, None, model)
        return  # the layer-by-layer comparison needs the whole model in one NNAPI model
    _describe(report, conversion)
    accuracy = report.accuracy
    report.quantization.quantized = any(o.info.is_quantized for o in conversion.model.operands)
    alternate = alternate_engine() if report.quantization.quantized else None
    accuracy.alternate_engine = alternate or ""
    progress("running the converted model")
    _check_outputs(report, expected, conversion, examples, host, alternate, model)
    if layers:
        progress("comparing layer by layer" + (" (isolated)" if accuracy.isolated else ""))
        try:
            diffs = compare_layers(model, examples, alternate=alternate,
                                   isolated=accuracy.isolated, **options)
        except Exception as e:  # noqa: BLE001 - reported, the rest of the check stands
            report.errors.append(f"layer-by-layer comparison failed: {one_line(e)}")
        else:
            accuracy.layers = [_layer(d, accuracy) for d in diffs]
            accuracy.mark_drift()


def _eager(model: torch.nn.Module | torch.export.ExportedProgram,
           examples: tuple[torch.Tensor, ...]) -> Any:
    if isinstance(model, torch.export.ExportedProgram):
        model = model.module()
    with torch.no_grad():
        return model(*[x.clone() for x in examples])


def _describe(report: CheckReport, conversion: Conversion) -> None:
    model = conversion.model
    origins = conversion.lowered.cx.origins
    facts, levels, quantization = report.conversion, report.levels, report.quantization
    facts.seconds = conversion.seconds
    levels.feature_level = conversion.feature_level
    levels.model_requirements = model_requirements(model)
    levels.operations = operation_levels(model, origins)
    facts.operation_counts = dict(Counter(op.type.name for op in model.operations)
                                  .most_common())
    facts.transposes = layout_transposes(model, origins)
    quantization.types = quantized_types(model)
    if quantization.types:
        quantization.float_islands = float_islands(model, origins, levels.target_level
                                                   or levels.feature_level)
    for entry, spec in zip(report.inputs, conversion.lowered.specs, strict=False):
        entry["nhwc"] = bool(spec.nhwc)  # the order NNAPI takes the input in


def _describe_partitioned(report: CheckReport, conversion: PartitionedConversion) -> None:
    """Levels, counts and transposes over every region, and the partition itself."""
    facts, levels, quantization = report.conversion, report.levels, report.quantization
    facts.seconds = conversion.seconds
    facts.partition = conversion.report
    levels.feature_level = conversion.feature_level
    counts: Counter[str] = Counter()
    for region in conversion.regions:
        cx = region.result.cx
        levels.model_requirements += [r for r in model_requirements(cx.model)
                                      if r not in levels.model_requirements]
        levels.operations += operation_levels(cx.model, cx.origins)
        facts.transposes += layout_transposes(cx.model, cx.origins)
        counts.update(op.type.name for op in cx.model.operations)
        quantization.quantized = quantization.quantized or any(o.info.is_quantized
                                                               for o in cx.model.operands)
        quantization.types = sorted(set(quantization.types) | set(quantized_types(cx.model)),
                                    reverse=True)
    facts.operation_counts = dict(counts.most_common())


def _check_outputs(report: CheckReport, expected: Any,
                   conversion: Conversion | PartitionedConversion,
                   examples: tuple[torch.Tensor, ...], host: bool, alternate: str | None,
                   model: torch.nn.Module | torch.export.ExportedProgram) -> None:
    from .host import run_on_host

    module = conversion.module
    accuracy = report.accuracy
    accuracy.backend = "host runtime" if host else "PyTorch's NNAPI runtime"
    try:
        with torch.no_grad():
            actual = run_on_host(module, *examples) if host else module(*examples)
    except Exception as e:  # noqa: BLE001 - reported, the rest of the check stands
        report.errors.append(f"running the converted module ({accuracy.backend}) failed:"
                             f" {one_line(e)}")
        return
    library = loaded_nnapi_library()
    if not host and library:
        accuracy.backend += f" ({library})"
    other = None
    if alternate is not None:
        try:
            with quantized_engine(alternate):
                other = _eager(model, examples)
        except Exception:  # noqa: BLE001 - without a second reference, the first stands
            other = None
    accuracy.outputs, errors = compare_outputs(actual, expected, conversion,
                                               accuracy.float_tolerance,
                                               accuracy.quanta_tolerance, other)
    report.errors.extend(errors)


def compare_outputs(actual: object, expected: object,
                    conversion: Conversion | PartitionedConversion,
                    float_tolerance: float = FLOAT_TOLERANCE,
                    quanta_tolerance: float = QUANTA_TOLERANCE,
                    alternate: object = None) -> tuple[list[TensorCheck], list[str]]:
    """Each converted output against PyTorch's (and ``alternate``, the outputs another
    quantized engine computes), as the modules return them (a tensor, or tensors in tuples,
    lists, dicts...; the structures must agree): the checks, and the errors that prevent a
    comparison."""
    try:
        got, want = structure_of(actual), structure_of(expected)
    except CaptureError as e:
        return [], [str(e)]
    if not got.same_as(want):
        return [], [f"the converted module returns {got.describe()}, PyTorch"
                    f" {want.describe()}"]
    actual_leaves, expected_leaves = leaves_of(actual), leaves_of(expected)
    others: list[torch.Tensor] = []
    if alternate is not None:
        try:
            others = leaves_of(alternate)
        except CaptureError:
            others = []
    checks, errors = [], []
    for i, (path, a, ref) in enumerate(zip(want.paths(), actual_leaves, expected_leaves,
                                           strict=True)):
        name = f"output {i}" + (f" {path}" if want.nested else "")
        if tuple(a.shape) != tuple(ref.shape):
            errors.append(f"{name} has shape {list(a.shape)}, PyTorch's {list(ref.shape)}")
            continue
        quantum = output_quantum(conversion, i) if isinstance(
            conversion, PartitionedConversion) else dequantized_scale(conversion.lowered, i)
        error, unit = tensor_error(a, ref, quantum)
        other = others[i] if i < len(others) else None
        reference = None
        if isinstance(other, torch.Tensor) and other.shape == ref.shape:
            reference = AlternateReference(error=tensor_error(a, other, quantum)[0],
                                           gap=tensor_error(other, ref, quantum)[0])
        checks.append(TensorCheck(
            name=name, shape=list(ref.shape), error=error, unit=unit,
            tolerance=quanta_tolerance if unit == "quanta" else float_tolerance,
            alternate=reference))
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


__all__ = ["FLOAT_TOLERANCE", "QUANTA_TOLERANCE", "CheckReport", "FloatIsland", "OperationLevel",
           "Requirement", "TensorCheck", "Transpose", "check_model", "compare_outputs",
           "float_islands", "layout_transposes", "loaded_nnapi_library", "model_requirements",
           "operation_levels", "quantized_engine", "tensor_error"]
