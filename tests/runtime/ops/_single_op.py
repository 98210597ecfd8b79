"""Builds and runs one-operation models for the element-wise family tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation


@dataclass
class Arg:
    """An operand of the operation: a model input, or a constant when ``value`` is given."""

    type: OperandType
    dims: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    value: object = None
    channel_scales: Sequence[float] | None = None
    channel_dim: int = 0


def build(op: OperationType, inputs: Sequence[Arg], outputs: Sequence[Arg]) -> Model:
    m = Model()
    model_inputs = []
    in_ids = []
    for arg in inputs:
        index = m.add_operand(arg.type, arg.dims, arg.scale, arg.zero_point)
        if arg.channel_scales is not None:
            m.set_operand_symm_per_channel_quant_params(index, arg.channel_scales,
                                                        arg.channel_dim)
        if arg.value is not None:
            m.set_operand_value(index, arg.value)
        else:
            model_inputs.append(index)
        in_ids.append(index)
    out_ids = [m.add_operand(a.type, a.dims, a.scale, a.zero_point) for a in outputs]
    m.add_operation(op, in_ids, out_ids)
    m.identify_inputs_and_outputs(model_inputs, out_ids)
    return m.finish()


def run(op: OperationType, inputs: Sequence[Arg], outputs: Sequence[Arg] | Arg,
        feed: Sequence[np.ndarray]) -> np.ndarray | list[np.ndarray]:
    """Runs ``op`` on ``feed`` (the non-constant inputs); one output comes back bare."""
    single = isinstance(outputs, Arg)
    model = build(op, inputs, [outputs] if single else outputs)
    result = Compilation(model).run(list(feed)).outputs
    return result[0] if single else result
