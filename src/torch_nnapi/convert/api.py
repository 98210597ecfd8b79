"""``torch_nnapi.convert(model, example_inputs, **options)``: PyTorch -> NNAPI TorchScript.

The entry point only: options are checked once (``options.py``), a front-end captures the
model (``capture/``), the pipeline lowers it to an NNAPI Model (``pipeline/``), and the
PyTorch Mobile back-end serializes it into a module (``torchscript/``); when NNAPI cannot
run it whole, the CPU fallback (``fallback/``) partitions it instead.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..nnapi.devices import DeviceProfile
from ..nnapi.model import Model
from .capture.frontend import CapturedModel, capture_model, script_capture
from .errors import CaptureError, ConversionError, ConverterBug
from .fallback.convert import (
    PartitionedConversion,
    convert_partitioned,
    fallback_hint,
    kept_on_cpu,
)
from .options import ConversionOptions, Flexible, NhwcRequest, ReturnShapes
from .pipeline.layout_choice import lower_graph, nhwc_choices, require_level
from .pipeline.lowerer import Lowered
from .torchscript.program import calls_models, torchscript_model
from .torchscript.serialize import SerializedModel


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


def convert(model: object, example_inputs: object = None, **options: Any
            ) -> torch.jit.ScriptModule:
    """Converts ``model`` (an nn.Module, traced or exported here, a ScriptModule, or an
    ExportedProgram) to a TorchScript module that runs it through NNAPI (with
    ``fallback=True``, what NNAPI cannot run on the CPU). See :func:`convert_with_details`
    for the options."""
    return convert_with_details(model, example_inputs, **options).module


def convert_with_details(
    model: object,
    example_inputs: object = None,
    *,
    capture: str | None = None,
    nhwc: NhwcRequest = None,
    flexible: Flexible = None,
    compilation_preference: str | int = "sustained_speed",
    relax_fp32_to_fp16: bool = False,
    return_shapes: ReturnShapes = None,
    target_level: int | None = None,
    fallback: bool = False,
    fallback_ops: Sequence[str] = (),
    min_region_size: int = 1,
    max_regions: int | None = None,
    device: DeviceProfile | str | None = None,
) -> Conversion | PartitionedConversion:
    """Converts ``model`` and returns the module with the NNAPI model behind it. ``model``
    may also be what :func:`~torch_nnapi.convert.capture.script.capture_script` made of it
    for these example inputs (to convert one model several ways without capturing it
    again).

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
      one TorchScript module. The result is then a
      :class:`~.fallback.convert.PartitionedConversion` (a model that converts whole still
      gives a :class:`Conversion`). Without it, an unsupported model raises
      :class:`ConversionError` ending with what ``fallback=True`` would make of it.
    - ``fallback_ops``: op kinds (``"aten::softmax"``) that stay on the CPU.
    - ``min_region_size``: regions with fewer computing NNAPI operations (RESHAPE and other
      data moves not counted) run on the CPU; default 1.
    - ``max_regions``: at most this many NNAPI regions, the largest; default no limit.
    - ``device``: convert for a phone's driver (a device profile, a shipped profile's name or
      a JSON path; docs/device_profiles.md), with ``fallback=True``: the operations the
      driver does not support run on PyTorch's CPU instead of Android's nnapi-reference, so
      each NNAPI region runs whole on the driver.
    """
    start = time.perf_counter()
    options = ConversionOptions.of(
        capture=capture, nhwc=nhwc, flexible=flexible,
        compilation_preference=compilation_preference, relax_fp32_to_fp16=relax_fp32_to_fp16,
        return_shapes=return_shapes, target_level=target_level, fallback=fallback,
        fallback_ops=fallback_ops, min_region_size=min_region_size, max_regions=max_regions,
        device=device)
    front = capture_model(model, example_inputs, capture_mode=options.capture,
                          flexible=options.flexible)
    relax = options.compile.relax_fp32_to_fp16
    try:
        if options.fallback and kept_on_cpu(front.graph, options.policy):
            raise ConversionError([])  # some ops must stay on the CPU: partition
        lowered = lower_graph(front.graph, front.examples, nhwc=options.nhwc,
                              flexible=front.flexible, relax=relax,
                              target_level=options.target_level)
        if options.target_level is not None:
            require_level(lowered.cx.model, lowered.cx.origins, options.target_level)
        device = options.policy.device
        if device is not None and not all(device.supported_operations(lowered.cx.model)):
            raise ConversionError([])  # the device cannot run it whole: partition
        if options.fallback and calls_models(lowered):
            raise ConversionError([])  # IF/WHILE: the control flow stays in TorchScript
    except (ConversionError, ConverterBug) as e:
        if not options.fallback:
            if isinstance(e, ConversionError):
                e.with_hint(_fallback_hint(front, options))
            raise
        return _partitioned(front, options, start)
    if lowered.cx.per_channel_in_float:
        warnings.warn(per_channel_note(lowered.cx.per_channel_in_float), UserWarning,
                      stacklevel=2)
    built = torchscript_model(lowered, options.compile, options.return_shapes)
    return Conversion(built.module, lowered.cx.model, built.serialized, lowered,
                      time.perf_counter() - start)


def per_channel_note(layers: int) -> str:
    """Why a model quantized with per-channel weights has float layers on this path."""
    return (f"torch-nnapi: {layers} quantized layer(s) have per-channel weights, which PyTorch"
            " Mobile's NNAPI format cannot carry: they run in float between DEQUANTIZE and"
            " QUANTIZE (quantize with per_channel=False for 8-bit layers here, or use"
            " torch_nnapi.executorch, which carries them)")


def _partitioned(front: CapturedModel, options: ConversionOptions, start: float
                 ) -> PartitionedConversion:
    if options.return_shapes is not None:
        raise ValueError("return_shapes applies to a model that converts whole; this one"
                         " needs the CPU fallback") from None
    return convert_partitioned(script_capture(front), front.examples, options.policy,
                               nhwc=nhwc_choices(front.examples, options.nhwc),
                               flexible=front.flexible, compile=options.compile, start=start)


def _fallback_hint(front: CapturedModel, options: ConversionOptions) -> str:
    """What ``fallback=True`` would make of the model; for the export front-end, a line
    saying why not when the exported program cannot be traced for it."""
    try:
        captured = script_capture(front)
    except CaptureError as e:
        return f"fallback=True cannot help: {e}"
    return fallback_hint(captured, front.examples, options.policy,
                         nhwc=nhwc_choices(front.examples, options.nhwc),
                         flexible=front.flexible, relax=options.compile.relax_fp32_to_fp16)
