"""Lowered NNAPI model -> the TorchScript module PyTorch Mobile's NNAPI runtime runs.

The back-end of the PyTorch Mobile path: serializes the model in the format of PyTorch's
NNAPI runtime (``serialize.py``), describes how the module feeds it (a
:class:`~.spec.ProgramSpec`) and builds the module (``module.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ...nnapi.codes import OperationType
from ..builder import layout as lay
from ..builder.symbolic import program
from ..builder.values import TensorValue
from ..errors import ConversionError, UnsupportedUse
from ..levels import origin_of
from ..options import CompileOptions, ReturnShapes
from ..pipeline.lowerer import InputSpec, Lowered
from .module import (
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
from .serialize import SerializedModel, serialize
from .spec import LoadTimeSizes, ProgramInput, ProgramOutput, ProgramSpec

_CALLING = (OperationType.IF, OperationType.WHILE)
_KINDS = {"float32": KIND_FLOAT32, "quint8": KIND_QUINT8, "int32": KIND_INT32,
          "int64": KIND_INT64, "bool": KIND_BOOL, "float16": KIND_FLOAT16}


@dataclass
class TorchScriptModel:
    """A lowered model as PyTorch Mobile runs it."""

    module: torch.jit.ScriptModule
    serialized: SerializedModel


def torchscript_model(lowered: Lowered, compile: CompileOptions,
                      return_shapes: ReturnShapes = None) -> TorchScriptModel:
    """The user-facing module running ``lowered``: ``forward(input_0, ...)`` returning its
    tensors nested as the original model did (a tensor, tuples, lists, dicts...)."""
    serialized = serialize_lowered(lowered)
    prog = nnapi_program(lowered, serialized, compile, return_shapes)
    module = build_module(prog, len(lowered.specs), lowered.structure)
    return TorchScriptModel(module, serialized)


def serialize_lowered(lowered: Lowered) -> SerializedModel:
    cx = lowered.cx
    _refuse_called_models(lowered)
    return serialize(cx.model, cx.sym_dims, cx.sym_values)


def calls_models(lowered: Lowered) -> bool:
    """Whether ``lowered`` holds IF or WHILE, whose called models PyTorch Mobile's NNAPI
    format (version 1) cannot carry: with the CPU fallback their control flow stays in
    TorchScript instead."""
    return any(op.type in _CALLING for op in lowered.cx.model.operations)


def _refuse_called_models(lowered: Lowered) -> None:
    """PyTorch Mobile's NNAPI format (version 1) carries no models for IF and WHILE to call:
    ``torch.cond`` and ``torch.while_loop`` convert whole for ExecuTorch only, and for
    PyTorch Mobile with the CPU fallback."""
    cx = lowered.cx
    uses = []
    for op in cx.model.operations:
        if op.type in _CALLING:
            node = cx.origins.get(op.outputs[0]) if op.outputs else None
            uses.append(UnsupportedUse(
                node.kind if node is not None else op.type.name,
                f"it becomes NNAPI {op.type.name}, whose called models PyTorch Mobile's NNAPI"
                " format cannot carry; lower it for ExecuTorch"
                " (torch_nnapi.executorch.to_pte(..., target_level=4)), or for PyTorch Mobile"
                " convert with fallback=True (the control flow stays in TorchScript, its"
                " bodies' regions run on NNAPI)",
                node.location if node is not None else "the model"))
    if uses:
        raise ConversionError(uses)


def nnapi_program(lowered: Lowered, serialized: SerializedModel, compile: CompileOptions,
                  return_shapes: ReturnShapes = None) -> NnapiProgram:
    """The TorchScript module that runs one lowered and serialized NNAPI model (a list of
    tensors in, a list out)."""
    cx = lowered.cx
    outputs = lowered.outputs
    if return_shapes is not None and len(return_shapes) != len(lowered.output_map):
        raise ValueError(f"return_shapes has {len(return_shapes)} entries for"
                         f" {len(lowered.output_map)} outputs")
    output_shapes = [[program(d) for d in lay.apply(t.layout, t.shape)] for t in outputs]
    if return_shapes is not None:
        for i, shape in enumerate(return_shapes):
            if shape is not None:
                k = lowered.output_map[i]
                output_shapes[k] = _override_shape(outputs[k], shape, output_shapes[k], i)
    load_time = LoadTimeSizes(
        patch_offsets=[p.offset for p in serialized.patches],
        patch_programs=[p.program for p in serialized.patches],
        guard_programs=[program(expr) for expr, _, _ in cx.guards],
        guard_values=[expected for _, expected, _ in cx.guards],
        guard_messages=[message for _, _, message in cx.guards])
    spec = ProgramSpec(
        serialized=torch.from_numpy(serialized.words.astype(np.int32)),
        weights=[torch.from_numpy(np.array(w, copy=True)) for w in serialized.weights],
        load_time=load_time,
        inputs=[_program_input(t, s) for t, s in zip(lowered.inputs, lowered.specs,
                                                      strict=False)],
        outputs=[_program_output(t, shape, rank) for t, shape, rank in
                 zip(outputs, output_shapes, lowered.output_ranks, strict=False)],
        output_map=list(lowered.output_map), compile=compile,
        feature_level=int(cx.model.feature_level),
        operation_origins=[origin_of(cx.model, cx.origins, k)
                           for k in range(len(cx.model.operations))])
    return NnapiProgram(spec)


def _program_input(t: TensorValue, spec: InputSpec) -> ProgramInput:
    return ProgramInput(
        shape=[-1 if d in spec.flexible else n for d, n in enumerate(spec.example.shape)],
        perm=[] if lay.is_identity(t.layout) else list(t.layout), cast=_input_cast(t, spec),
        scale=float(t.scale), zero_point=int(t.zero_point),
        dtype=getattr(torch, spec.example.dtype), groups=list(t.groups))


def _program_output(t: TensorValue, shape: list[list[int]], rank: int) -> ProgramOutput:
    return ProgramOutput(
        shape=shape, perm=[] if lay.is_identity(t.layout) else list(lay.inverse(t.layout)),
        kind=_KINDS[t.dtype], scale=float(t.scale), zero_point=int(t.zero_point), rank=rank,
        groups=list(t.groups))


def _input_cast(t: TensorValue, spec: InputSpec) -> int:
    if t.dtype == "int64" or spec.example.dtype == "bool":
        return CAST_INT32  # a bool input becomes TENSOR_BOOL8 inside (lowerer._add_bool_input)
    if t.dtype == "quint8" and spec.example.dtype == "float32":
        return CAST_QUANTIZE  # quantized on the host (lowerer._quantized_on_host)
    return CAST_NONE


def _override_shape(t: TensorValue, shape: Sequence[int | None], computed: list[list[int]],
                    index: int) -> list[list[int]]:
    """Output ``index``'s stored dimensions with the sizes ``return_shapes`` gives (in
    PyTorch's order; None or -1 keep the computed one)."""
    if len(shape) != t.rank:
        raise ValueError(f"return_shapes[{index}] has rank {len(shape)}, output {index} has"
                         f" rank {t.rank}")
    torch_programs = [computed[lay.axis(t.layout, d)] for d in range(t.rank)]
    for d, size in enumerate(shape):
        if size is not None and int(size) >= 0:
            torch_programs[d] = program(int(size))
    return [torch_programs[torch_dim] for torch_dim in t.layout]


__all__ = ["TorchScriptModel", "calls_models", "nnapi_program", "serialize_lowered",
           "torchscript_model"]
