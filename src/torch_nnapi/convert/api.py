"""``torch_nnapi.convert(model, example_inputs, **options)``: PyTorch -> NNAPI TorchScript."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import torch

from ..nnapi.codes import PreferenceCode
from ..nnapi.model import Model
from . import layout as lay
from .capture import as_example_tuple, capture
from .lower import Lowered, example_spec, lower
from .serialize import SerializedModel, serialize
from .symbolic import program
from .values import TensorValue
from .wrapper import (
    CAST_INT32,
    CAST_NONE,
    KIND_BOOL,
    KIND_FLOAT16,
    KIND_FLOAT32,
    KIND_INT32,
    KIND_INT64,
    KIND_QUINT8,
    NnapiProgram,
    build_module,
)

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


def convert(model, example_inputs, **options) -> torch.jit.ScriptModule:
    """Converts ``model`` (an nn.Module, traced here, or a ScriptModule) to a TorchScript
    module that runs it through NNAPI. See :func:`convert_with_details` for the options."""
    return convert_with_details(model, example_inputs, **options).module


def convert_with_details(
    model,
    example_inputs,
    *,
    nhwc: Union[bool, Sequence[bool]] = False,
    flexible: Union[None, Mapping[int, Sequence[int]], Sequence[Sequence[int]]] = None,
    compilation_preference: Union[str, int] = "sustained_speed",
    relax_fp32_to_fp16: bool = False,
    return_shapes: Optional[Sequence[Optional[Sequence[int]]]] = None,
) -> Conversion:
    """Converts ``model`` and returns the module with the NNAPI model behind it.

    - ``nhwc``: per input (or one bool for all 4-D inputs): the module takes the input
      NCHW as usual but hands it to NNAPI channels-last, which channel-last convolutions
      then keep. A tensor with ``nnapi_nhwc = True`` set opts in too (the prototype's way).
    - ``flexible``: per input, the dimensions resolved at load time from the real input
      shapes (e.g. ``{0: [2, 3]}``: any height and width), so one artifact serves several
      resolutions. The example inputs give the sizes used for checking the conversion.
    - ``compilation_preference``: ``"sustained_speed"`` (default), ``"fast_single_answer"``
      or ``"low_power"`` (or the NNAPI code).
    - ``relax_fp32_to_fp16``: allow NNAPI to compute float32 in float16.
    - ``return_shapes``: per output, the PyTorch-order shape of its buffer (None or -1
      entries keep the computed size); only needed to over-allocate outputs.
    """
    start = time.perf_counter()
    examples = as_example_tuple(example_inputs)
    specs = _input_specs(examples, nhwc, flexible)
    preference = _preference(compilation_preference)
    graph = capture(model, examples)
    lowered = lower(graph, specs, relax_float32_to_float16=relax_fp32_to_fp16)
    cx = lowered.cx
    serialized = serialize(cx.model, cx.sym_dims, cx.sym_values)
    prog = _program(lowered, serialized, specs, preference, relax_fp32_to_fp16, return_shapes)
    module = build_module(prog, len(examples), lowered.returns, len(lowered.output_map))
    return Conversion(module, cx.model, serialized, lowered, time.perf_counter() - start)


def _input_specs(examples, nhwc, flexible):
    n = len(examples)
    if isinstance(nhwc, bool):
        nhwc_list = [nhwc and x.dim() == 4 for x in examples]
    else:
        nhwc_list = [bool(b) for b in nhwc]
        if len(nhwc_list) != n:
            raise ValueError(f"nhwc has {len(nhwc_list)} entries for {n} inputs")
    nhwc_list = [b or bool(getattr(x, "nnapi_nhwc", False)) for b, x in zip(nhwc_list, examples)]
    if flexible is None:
        flex = [()] * n
    elif isinstance(flexible, Mapping):
        for k in flexible:
            if not 0 <= int(k) < n:
                raise ValueError(f"flexible names input {k}, but the model has {n} inputs")
        flex = [tuple(flexible.get(i, ())) for i in range(n)]
    else:
        flex = [tuple(f or ()) for f in flexible]
        if len(flex) != n:
            raise ValueError(f"flexible has {len(flex)} entries for {n} inputs")
    for i, (x, dims) in enumerate(zip(examples, flex)):
        for d in dims:
            if not -x.dim() <= d < x.dim():
                raise ValueError(f"flexible dimension {d} of input {i} is out of range for"
                                 f" its shape {list(x.shape)}")
    return [example_spec(x, b, f) for x, b, f in zip(examples, nhwc_list, flex)]


def _preference(value) -> int:
    if isinstance(value, str):
        try:
            return int(PREFERENCES[value.lower().replace("-", "_")])
        except KeyError:
            raise ValueError(f"compilation_preference must be one of {sorted(PREFERENCES)},"
                             f" got {value!r}") from None
    return int(PreferenceCode(int(value)))


def _program(lowered: Lowered, serialized: SerializedModel, specs, preference: int,
             relax: bool, return_shapes) -> NnapiProgram:
    cx = lowered.cx
    guard_programs = [program(expr) for expr, _, _ in cx.guards]
    guard_values = [expected for _, expected, _ in cx.guards]
    guard_messages = [message for _, _, message in cx.guards]
    input_shapes = [[-1 if d in s.flexible else n for d, n in enumerate(s.example.shape)]
                    for s in specs]
    input_perms = [list(t.layout) if not lay.is_identity(t.layout) else []
                   for t in lowered.inputs]
    input_casts = [CAST_INT32 if t.dtype == "int64" else CAST_NONE for t in lowered.inputs]
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
        output_shapes, [list(lay.inverse(t.layout)) if not lay.is_identity(t.layout) else []
                        for t in outputs],
        [_KINDS[t.dtype] for t in outputs], [float(t.scale) for t in outputs],
        [int(t.zero_point) for t in outputs], list(lowered.output_ranks),
        list(lowered.output_map), preference, bool(relax), int(cx.model.feature_level))


def _output_nnapi_shape(t: TensorValue):
    return t.nnapi_shape


def _override_shape(t: TensorValue, shape, computed, index):
    if len(shape) != t.rank:
        raise ValueError(f"return_shapes[{index}] has rank {len(shape)}, output {index} has"
                         f" rank {t.rank}")
    torch_programs = [None] * t.rank
    for nnapi_dim, torch_dim in enumerate(t.layout):
        torch_programs[torch_dim] = computed[nnapi_dim]
    for d, size in enumerate(shape):
        if size is not None and int(size) >= 0:
            torch_programs[d] = program(int(size))
    return [torch_programs[torch_dim] for torch_dim in t.layout]
