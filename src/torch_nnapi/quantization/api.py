"""``torch_nnapi.quantize``: PT2E post-training quantization for NNAPI, and its QAT variant.

The model is captured with ``torch.export`` (in eval mode for post-training quantization,
in training mode for QAT), annotated by :class:`NnapiQuantizer` for the target feature level,
observed on the calibration data (or trained), and converted by ``convert_pt2e`` into a
GraphModule of float ops between quantize/dequantize pairs, which ``torch_nnapi.convert``
folds into quantized NNAPI operations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from torch.fx import GraphModule

from ..convert.capture.export import export_module, is_exported
from ..convert.capture.frontend import example_inputs_of, flexible_per_input
from ..convert.options import Flexible
from ._torchao import (
    convert_pt2e,
    move_exported_model_to_eval,
    move_exported_model_to_train,
    prepare_pt2e,
    prepare_qat_pt2e,
)
from .quantizer import NnapiQuantizer, require_eval_mode

# A callable taking the prepared model, or inputs: tensors or tuples of tensors (None: the
# example inputs alone).
Calibration = Callable[[GraphModule], object] | Iterable[torch.Tensor | Sequence[torch.Tensor]] \
    | None
# What quantize takes: an nn.Module (exported here), an ExportedProgram or its GraphModule.
Quantizable = torch.nn.Module | torch.export.ExportedProgram


@dataclass
class Quantized:
    """What :func:`quantize_with_details` produced; :func:`quantize` returns ``model``."""

    model: GraphModule
    seconds: float  # export, preparation, calibration and conversion
    calibration_seconds: float


def prepare(model: Quantizable, example_inputs: object = None, *, target_level: int = 3,
            flexible: Flexible = None, observer: str = "histogram",
            per_channel: bool = False) -> GraphModule:
    """The model exported and observed for post-training quantization (``prepare_pt2e``
    with the NNAPI quantizer): run it on calibration data, then :func:`convert_prepared`."""
    quantizer = NnapiQuantizer(target_level, observer=observer, per_channel=per_channel)
    graph_module = _exported(model, example_inputs, flexible, train=False)
    require_eval_mode(graph_module)  # before prepare_pt2e folds batch norms into convolutions
    prepared: GraphModule = prepare_pt2e(graph_module, quantizer)
    return prepared


def prepare_qat(model: Quantizable, example_inputs: object = None, *, target_level: int = 3,
                flexible: Flexible = None, per_channel: bool = False) -> GraphModule:
    """The model exported in training mode with fake quantization (``prepare_qat_pt2e``
    with the NNAPI quantizer; batch norms are folded at conversion): train it, then
    :func:`convert_prepared`."""
    quantizer = NnapiQuantizer(target_level, is_qat=True, per_channel=per_channel)
    graph_module = _exported(model, example_inputs, flexible, train=True)
    prepared: GraphModule = prepare_qat_pt2e(graph_module, quantizer)
    move_exported_model_to_train(prepared)
    return prepared


def convert_prepared(prepared: GraphModule) -> GraphModule:
    """``convert_pt2e`` of a calibrated or trained model, in eval mode: ready for
    ``torch_nnapi.convert``."""
    move_exported_model_to_eval(prepared)
    converted: GraphModule = convert_pt2e(prepared)
    return converted


def quantize(model: Quantizable, example_inputs: object = None, calibration: Calibration = None, *,
             target_level: int = 3, flexible: Flexible = None,
             observer: str = "histogram", per_channel: bool = False) -> GraphModule:
    """Post-training quantization for NNAPI of ``target_level`` (1: Android 8.1 ... 3:
    Android 10, uint8; 4: Android 11, int8 signed). ``calibration`` is a callable taking the
    prepared model, or an iterable of inputs (tensors or tuples of tensors); None calibrates
    on the example inputs alone. ``per_channel``: convolution and linear weights with one
    scale per output channel (level 3 and up), which the ExecuTorch back-end carries
    (``torch_nnapi.executorch.quantize`` makes them by default) and PyTorch Mobile's format
    cannot. Returns the model ready for ``torch_nnapi.convert``."""
    return quantize_with_details(model, example_inputs, calibration, target_level=target_level,
                                 flexible=flexible, observer=observer,
                                 per_channel=per_channel).model


def quantize_with_details(model: Quantizable, example_inputs: object = None,
                          calibration: Calibration = None, *, target_level: int = 3,
                          flexible: Flexible = None, observer: str = "histogram",
                          per_channel: bool = False) -> Quantized:
    """:func:`quantize`, also returning the times taken."""
    start = time.perf_counter()
    prepared = prepare(model, example_inputs, target_level=target_level, flexible=flexible,
                       observer=observer, per_channel=per_channel)
    examples = example_inputs_of(model, example_inputs)
    calibrating = time.perf_counter()
    calibrate(prepared, examples if calibration is None else calibration)
    calibration_seconds = time.perf_counter() - calibrating
    quantized = convert_prepared(prepared)
    return Quantized(quantized, time.perf_counter() - start, calibration_seconds)


def calibrate(prepared: GraphModule, calibration: Callable[[GraphModule], object]
              | Iterable[torch.Tensor | Sequence[torch.Tensor]]) -> None:
    """Runs the observers on ``calibration``: a callable taking the model, an iterable of
    inputs, or one tuple of example tensors."""
    with torch.no_grad():
        if callable(calibration):
            calibration(prepared)
            return
        if isinstance(calibration, tuple) and all(isinstance(x, torch.Tensor)
                                                  for x in calibration):
            calibration = [calibration]
        count = 0
        for item in calibration:
            prepared(*(item if isinstance(item, (tuple, list)) else (item,)))
            count += 1
        if not count:
            raise ValueError("the calibration data is empty")


def _exported(model: object, example_inputs: object, flexible: Flexible, train: bool
              ) -> GraphModule:
    """The GraphModule PT2E works on (``ExportedProgram.module()``), exported here from an
    nn.Module (in eval mode, or training mode for QAT)."""
    if isinstance(model, torch.export.ExportedProgram):
        return model.module()
    if is_exported(model) and isinstance(model, GraphModule):
        return model
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        raise TypeError(f"quantize takes an nn.Module or an ExportedProgram, got"
                        f" {type(model).__name__}")
    examples = example_inputs_of(model, example_inputs)
    flex = flexible_per_input(examples, flexible)
    return export_module(model, examples, flex, train=train).module()


__all__ = ["NnapiQuantizer", "Quantized", "calibrate", "convert_prepared", "prepare",
           "prepare_qat", "quantize", "quantize_with_details"]

