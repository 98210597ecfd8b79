"""Builds and runs one-operation models for kernel tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation


@dataclass
class Tensor:
    """A model input (or, as an output, the declared output operand); 0 = unknown dimension."""

    type: OperandType
    dims: Sequence[int]
    scale: float = 0.0
    zero_point: int = 0


@dataclass
class Const:
    """A constant operand: a scalar when ``value`` is a Python number."""

    type: OperandType
    value: Any
    scale: float = 0.0
    zero_point: int = 0


def single_op_model(op: OperationType, inputs: Sequence[Tensor | Const],
                    outputs: Sequence[Tensor]) -> Model:
    m = Model()
    model_inputs, operation_inputs = [], []
    for spec in inputs:
        if isinstance(spec, Tensor):
            index = m.add_operand(spec.type, spec.dims, spec.scale, spec.zero_point)
            model_inputs.append(index)
        elif np.ndim(spec.value) == 0:
            index = m.add_scalar(spec.type, spec.value)
        else:
            index = m.add_constant(spec.type, spec.value, spec.scale, spec.zero_point)
        operation_inputs.append(index)
    output_indices = [m.add_operand(o.type, o.dims, o.scale, o.zero_point) for o in outputs]
    m.add_operation(op, operation_inputs, output_indices)
    m.identify_inputs_and_outputs(model_inputs, output_indices)
    return m.finish()


def run_single_op(op: OperationType, inputs: Sequence[Tensor | Const],
                  outputs: Sequence[Tensor], feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Builds the model, compiles it and runs it once on ``feeds`` (the Tensor inputs)."""
    return Compilation(single_op_model(op, inputs, outputs)).run(list(feeds)).outputs
