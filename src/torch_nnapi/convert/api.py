"""``torch_nnapi.convert(model, example_inputs, **options)``: PyTorch -> NNAPI TorchScript."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..nnapi.codes import FeatureLevel, PreferenceCode
from ..nnapi.model import Model
from .builder import layout as lay
from .builder.symbolic import program
from .builder.values import TensorValue
from .capture.frontend import (
    CapturedModel,
    Flexible,
    capture_model,
    flexible_per_input,
    script_capture,
)
from .errors import CaptureError, ConversionError, ConverterBug, FeatureLevelError, UnsupportedUse
from .fallback.partition import FallbackPolicy
from .levels import above, model_requirements, operation_levels, origin_of
from .pipeline.lowerer import Lowered, Lowerer, LowererFactory, example_spec, lower
from .torchscript.module import (
    CAST_INT32,
    CAST_NONE,
    CAST_QUANTIZE,
    KIND_BOOL,
    KIND_FLOAT16,
    KIND_FLOAT32,
    KIND_INT32,
    KIND_INT64,
    KIND_QUINT8,
    NnapiProgram,
    build_module,
)
from .torchscript.serialize import SerializedModel, serialize

if TYPE_CHECKING:
    from .fallback.convert import PartitionedConversion

PREFERENCES = {
    "low_power": PreferenceCode.LOW_POWER,
    "fast_single_answer": PreferenceCode.FAST_SINGLE_ANSWER,
    "sustained_speed": PreferenceCode.SUSTAINED_SPEED,
}

_KINDS = {"float32": KIND_FLOAT32, "quint8": KIND_QUINT8, "int32": KIND_INT32,
          "int64": KIND_INT64, "bool": KIND_BOOL, "float16": KIND_FLOAT16}


@dataclass
class Conversion:
    """Everything a conversion produced; ``convert`` returns only ``module``."""

    module: torch.jit.ScriptModule
    model: Model  # the finished NNAPI model (flexible dimensions are 0)
    serialized: SerializedModel
    lowered: Lowered
    seconds: float

    @property
    def feature_level(self) -> int:
        return int(self.model.feature_level)


def convert(model, example_inputs=None, **options) -> torch.jit.ScriptModule:
    """Converts ``model`` (an nn.Module, traced or exported here, a ScriptModule, or an
    ExportedProgram) to a TorchScript module that runs it through NNAPI (with
    ``fallback=True``, what NNAPI cannot run on the CPU). See :func:`convert_with_details`
    for the options."""
    return convert_with_details(model, example_inputs, **options).module


def convert_with_details(
    model,
    example_inputs=None,
    *,
    capture: str | None = None,
    nhwc: None | bool | Sequence[bool | None] = None,
    flexible: Flexible = None,
    compilation_preference: str | int = "sustained_speed",
    relax_fp32_to_fp16: bool = False,
    return_shapes: Sequence[Sequence[int] | None] | None = None,
    target_level: int | None = None,
    fallback: bool = False,
    fallback_ops: Sequence[str] = (),
    min_region_size: int = 1,
    max_regions: int | None = None,
) -> Conversion | PartitionedConversion:
    """Converts ``model`` and returns the module with the NNAPI model behind it. ``model``
    may also be what :func:`~torch_nnapi.convert.capture.capture_script` made of it for
    these example inputs (to convert one model several ways without capturing it again).

    - ``capture``: the front-end, ``"trace"`` (torch.jit.trace and freeze; the default for
      an nn.Module) or ``"export"`` (torch.export; always for an ExportedProgram, whose
      example inputs are used when ``example_inputs`` is None, and for the GraphModules
      that ``torch_nnapi.quantize`` and PT2E return). An exported program's symbolic
      dimensions (``torch.export.Dim``) are flexible dimensions.
    - ``nhwc``: per input (or one value for all 4-D inputs): True hands the input to NNAPI
      channels-last (the module still takes it NCHW, as usual, and permutes it), which
      channel-last convolutions then keep; False keeps PyTorch's order (NNAPI's NCHW layout
      flag, which needs feature level 3); None (the default) chooses: PyTorch's order
      unless channels-last gives a model of a lower feature level, as it does for CNNs. A
      tensor with ``nnapi_nhwc = True`` set opts in too (the prototype's way).
    - ``flexible``: per input, the dimensions resolved at load time from the real input
      shapes (e.g. ``{0: [2, 3]}``: any height and width), so one artifact serves several
      resolutions. The example inputs give the sizes used for checking the conversion.
    - ``compilation_preference``: ``"sustained_speed"`` (default), ``"fast_single_answer"``
      or ``"low_power"`` (or the NNAPI code).
    - ``relax_fp32_to_fp16``: allow NNAPI to compute float32 in float16.
    - ``return_shapes``: per output, the PyTorch-order shape of its buffer (None or -1
      entries keep the computed size); only needed to over-allocate outputs.
    - ``target_level``: the NNAPI feature level the model must run at (1: Android 8.1, 2:
      Android 9, 3: Android 10, 4: Android 11); a model needing more raises
      :class:`FeatureLevelError` (a :class:`ConversionError`) naming every operation that
      needs more, why, and the PyTorch code it comes from. Operations of the target level
      replace compositions where they are shorter (level 4: HARD_SWISH, ELU, FILL).
      Default: no limit, and the lowest level's forms.
    - ``fallback``: run on the CPU what NNAPI cannot (no lowering, a lowering that rejects
      the node, an op in ``fallback_ops``, an operation above ``target_level``): the model
      is split into NNAPI regions, each its own NNAPI model, and CPU nodes, run in order by
      one TorchScript module. The result is then a :class:`~.fallback.PartitionedConversion`
      (a model that converts whole still gives a :class:`Conversion`). Without it, an
      unsupported model raises :class:`ConversionError` ending with what ``fallback=True``
      would make of it.
    - ``fallback_ops``: op kinds (``"aten::softmax"``) that stay on the CPU.
    - ``min_region_size``: regions with fewer computing NNAPI operations (RESHAPE and other
      data moves not counted) run on the CPU; default 1.
    - ``max_regions``: at most this many NNAPI regions, the largest; default no limit.
    """
    start = time.perf_counter()
    if target_level is not None:
        target_level = int(FeatureLevel(int(target_level)))
    preference = _preference(compilation_preference)
    if not fallback and (fallback_ops or min_region_size != 1 or max_regions is not None):
        raise ValueError("fallback_ops, min_region_size and max_regions need fallback=True")
    policy = FallbackPolicy(frozenset(fallback_ops), int(min_region_size),
                            None if max_regions is None else int(max_regions), target_level)
    front = capture_model(model, example_inputs, capture_mode=capture, flexible=flexible)
    examples = front.examples
    choices, flex = _nhwc_choices(examples, nhwc), front.flexible
    try:
        if fallback and _denied_kinds(front.graph, policy):
            raise ConversionError([])  # some ops must stay on the CPU: partition
        lowered = lower_graph(front.graph, examples, nhwc, flex, relax_fp32_to_fp16,
                              target_level)
        cx = lowered.cx
        if target_level is not None:
            require_level(cx.model, cx.origins, target_level)
    except (ConversionError, ConverterBug) as e:
        from .fallback.convert import convert_partitioned

        if not fallback:
            if isinstance(e, ConversionError):
                e.with_hint(_fallback_hint(front, policy, choices, relax_fp32_to_fp16))
            raise
        if return_shapes is not None:
            raise ValueError("return_shapes applies to a model that converts whole; this one"
                             " needs the CPU fallback") from None
        captured = script_capture(front)
        return convert_partitioned(captured, examples, policy, nhwc=choices, flexible=flex,
                                   preference=preference, relax=relax_fp32_to_fp16,
                                   start=start)
    serialized = serialize(cx.model, cx.sym_dims, cx.sym_values)
    prog = nnapi_program(lowered, serialized, preference, relax_fp32_to_fp16, return_shapes)
    module = build_module(prog, len(examples), lowered.returns, len(lowered.output_map))
    return Conversion(module, cx.model, serialized, lowered, time.perf_counter() - start)


def _fallback_hint(front: CapturedModel, policy: FallbackPolicy, nhwc, relax: bool) -> str:
    """What ``fallback=True`` would make of the model; for the export front-end, a line
    saying why not when the exported program cannot be traced for it."""
    from .fallback.convert import fallback_hint

    try:
        captured = script_capture(front)
    except CaptureError as e:
        return f"fallback=True cannot help: {e}"
    return fallback_hint(captured, front.examples, policy, nhwc=nhwc, flexible=front.flexible,
                         relax=relax)


def _denied_kinds(graph, policy: FallbackPolicy) -> set[str]:
    """The op kinds of ``graph`` that ``fallback_ops`` keeps on the CPU."""
    kinds = {n.kind for n in graph.walk()} | {s.kind for n in graph.walk() for s in n.steps}
    return kinds & set(policy.fallback_ops)


def lower_graph(graph, examples: tuple, nhwc, flexible, relax: bool = False,
                target_level: int | None = None,
                make_lowerer: LowererFactory | None = None) -> Lowered:
    """Lowers a captured graph, choosing the NNAPI layout of the inputs ``nhwc`` leaves
    open (None): PyTorch's order first; if the model then needs more than feature level 1,
    channels-last too, kept when its level is lower, or equal with fewer operations above
    level 1. NNAPI's NCHW layout flag needs level 3, while channels-last convolutions and
    pools need level 1, and the wrapper permutes the input on the host either way.
    ``target_level`` lets the default Lowerer use operations up to that feature level;
    ``make_lowerer`` replaces it (the CPU fallback's, which records per node)."""
    choices = _nhwc_choices(examples, nhwc)
    flex = flexible_per_input(examples, flexible)

    def factory(graph, specs: Sequence) -> Lowerer:
        if make_lowerer is not None:
            return make_lowerer(graph, specs)
        return Lowerer(graph, specs, target_level=target_level)

    def attempt(open_as: bool) -> Lowered:
        specs = [example_spec(x, open_as if c is None else c, f)
                 for x, c, f in zip(examples, choices, flex, strict=False)]
        return lower(graph, specs, relax_float32_to_float16=relax, make_lowerer=factory)

    lowered = attempt(False)
    if None in choices and lowered.cx.model.feature_level > 1:
        try:
            channels_last = attempt(True)
        except ConversionError:
            return lowered
        except ConverterBug as e:  # keep the sound conversion, but say so
            warnings.warn(f"torch-nnapi: converting channels-last failed ({e}); the model"
                          " keeps PyTorch's order", RuntimeWarning, stacklevel=3)
            return lowered
        if _level_cost(channels_last) < _level_cost(lowered):
            return channels_last
    return lowered


def _level_cost(lowered: Lowered) -> tuple[int, int]:
    """The model's feature level, then how many of its operations need more than level 1
    (what an older device, or one whose driver lacks the newer features, cannot run)."""
    model = lowered.cx.model
    return int(model.feature_level), sum(m.level > 1 for m in model.matches)


def require_level(model: Model, origins, target_level: int) -> None:
    """Raises FeatureLevelError if a device of ``target_level`` would reject the model."""
    if int(model.feature_level) <= target_level:
        return
    operations = above(operation_levels(model, origins), target_level)
    reasons = [r.reason for r in model_requirements(model) if r.level > target_level]
    uses = [UnsupportedUse(op.kind or op.type,
                           f"{op.type}: {'; '.join(op.reasons_above(target_level))}",
                           op.location or "an unknown place") for op in operations]
    raise FeatureLevelError(uses, target_level=target_level,
                            feature_level=int(model.feature_level), operations=operations,
                            model_reasons=reasons)


def _nhwc_choices(examples: tuple, nhwc) -> list[bool | None]:
    """Per input: True (channels-last), False (PyTorch's order) or None (to choose)."""
    n = len(examples)
    if nhwc is None or isinstance(nhwc, bool):  # one value for the 4-D inputs
        choices = [nhwc if x.dim() == 4 else False for x in examples]
    else:
        choices = [None if b is None else bool(b) for b in nhwc]
        if len(choices) != n:
            raise ValueError(f"nhwc has {len(choices)} entries for {n} inputs")
    result = []
    for c, x in zip(choices, examples, strict=False):
        if getattr(x, "nnapi_nhwc", False):
            c = True
        result.append(c if x.dim() == 4 or c else False)
    return result


def _preference(value) -> int:
    if isinstance(value, str):
        try:
            return int(PREFERENCES[value.lower().replace("-", "_")])
        except KeyError:
            raise ValueError(f"compilation_preference must be one of {sorted(PREFERENCES)},"
                             f" got {value!r}") from None
    return int(PreferenceCode(int(value)))


def nnapi_program(lowered: Lowered, serialized: SerializedModel, preference: int,
                  relax: bool, return_shapes=None) -> NnapiProgram:
    """The TorchScript module that runs one lowered and serialized NNAPI model."""
    cx = lowered.cx
    specs = lowered.specs
    guard_programs = [program(expr) for expr, _, _ in cx.guards]
    guard_values = [expected for _, expected, _ in cx.guards]
    guard_messages = [message for _, _, message in cx.guards]
    input_shapes = [[-1 if d in s.flexible else n for d, n in enumerate(s.example.shape)]
                    for s in specs]
    input_perms = [list(t.layout) if not lay.is_identity(t.layout) else []
                   for t in lowered.inputs]
    input_casts = [_input_cast(t, s) for t, s in zip(lowered.inputs, specs, strict=False)]
    input_scales = [float(t.scale) for t in lowered.inputs]
    input_zero_points = [int(t.zero_point) for t in lowered.inputs]
    outputs = lowered.outputs
    if return_shapes is not None and len(return_shapes) != len(lowered.output_map):
        raise ValueError(f"return_shapes has {len(return_shapes)} entries for"
                         f" {len(lowered.output_map)} outputs")
    output_shapes = [[program(d) for d in _output_nnapi_shape(t)] for t in outputs]
    if return_shapes is not None:
        for i, shape in enumerate(return_shapes):
            if shape is not None:
                k = lowered.output_map[i]
                output_shapes[k] = _override_shape(outputs[k], shape, output_shapes[k], i)
    weights = [torch.from_numpy(np.array(w, copy=True)) for w in serialized.weights]
    return NnapiProgram(
        torch.from_numpy(serialized.words.astype(np.int32)), weights,
        [p.offset for p in serialized.patches], [p.program for p in serialized.patches],
        guard_programs, guard_values, guard_messages, input_shapes, input_perms, input_casts,
        input_scales, input_zero_points,
        output_shapes, [list(lay.inverse(t.layout)) if not lay.is_identity(t.layout) else []
                        for t in outputs],
        [_KINDS[t.dtype] for t in outputs], [float(t.scale) for t in outputs],
        [int(t.zero_point) for t in outputs], list(lowered.output_ranks),
        list(lowered.output_map), preference, bool(relax), int(cx.model.feature_level),
        input_dtypes=[getattr(torch, s.example.dtype) for s in specs],
        operation_origins=[origin_of(cx.model, cx.origins, k)
                           for k in range(len(cx.model.operations))],
        input_groups=[list(t.groups) for t in lowered.inputs],
        output_groups=[list(t.groups) for t in outputs])


def _input_cast(t: TensorValue, spec) -> int:
    if t.dtype == "int64" or spec.example.dtype == "bool":
        return CAST_INT32  # a bool input becomes TENSOR_BOOL8 inside (lower._add_bool_input)
    if t.dtype == "quint8" and spec.example.dtype == "float32":
        return CAST_QUANTIZE  # quantized on the host (lower._quantized_on_host)
    return CAST_NONE


def _output_nnapi_shape(t: TensorValue):
    """Every stored dimension (the wrapper merges the runs of ``t.groups`` itself)."""
    return lay.apply(t.layout, t.shape)


def _override_shape(t: TensorValue, shape, computed, index):
    if len(shape) != t.rank:
        raise ValueError(f"return_shapes[{index}] has rank {len(shape)}, output {index} has"
                         f" rank {t.rank}")
    torch_programs: list[list[int] | None] = [None] * t.rank
    for nnapi_dim, torch_dim in enumerate(t.layout):
        torch_programs[torch_dim] = computed[nnapi_dim]
    for d, size in enumerate(shape):
        if size is not None and int(size) >= 0:
            torch_programs[d] = program(int(size))
    return [torch_programs[torch_dim] for torch_dim in t.layout]
