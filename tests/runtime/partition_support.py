"""For the partitioning tests: small models whose operations land on different devices, and
the comparison of every plan with the oracle's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from torch_nnapi.nnapi import Model, NnapiError, OperandType, OperationType, PreferenceCode
from torch_nnapi.nnapi.devices import (
    DeviceProfile,
    reference_profile,
    shipped_profile,
    shipped_profile_names,
)
from torch_nnapi.runtime.partitioning import Step, plan, supported_operations

from . import android_oracle as oracle

F32 = OperandType.TENSOR_FLOAT32


def chain(operations: Sequence[OperationType], dims: Sequence[int] = (2,), *,
          finish: bool = True, unknown_middle: bool = False) -> Model:
    """x -> op0(x, b) -> op1(., b) -> ... on float32 tensors (ADD, MUL, SUB, DIV, MAXIMUM...):
    operands x=0, b=1; with ``unknown_middle`` the temporaries have unknown dimensions."""
    m = Model()
    x, b = m.add_operand(F32, dims), m.add_operand(F32, dims)
    value = x
    for k, op in enumerate(operations):
        last = k == len(operations) - 1
        out = m.add_operand(F32, dims if last or not unknown_middle else [0] * len(dims))
        fused = op in (OperationType.ADD, OperationType.MUL, OperationType.SUB,
                       OperationType.DIV)
        extra = [m.add_scalar(OperandType.INT32, 0)] if fused else []
        m.add_operation(op, [value, b, *extra], [out])
        value = out
    m.identify_inputs_and_outputs([x, b], [value])
    return m.finish() if finish else m


def if_model(then_ops: Sequence[OperationType], else_ops: Sequence[OperationType]) -> Model:
    """out = IF(cond) then_ops(x, b) else else_ops(x, b); inputs cond, x, b."""
    m = Model()
    cond = m.add_operand(OperandType.TENSOR_BOOL8, (1,))
    x, b, out = (m.add_operand(F32, (2,)) for _ in range(3))
    then_model, else_model = chain(then_ops), chain(else_ops)
    m.add_operation(OperationType.IF, [cond, m.add_model_operand(then_model),
                                       m.add_model_operand(else_model), x, b], [out])
    m.identify_inputs_and_outputs([cond, x, b], [out])
    return m.finish()


def inputs_for(model: Model, seed: int = 0) -> list[np.ndarray]:
    """Random inputs of the model's types and (fully specified) shapes; bool8 inputs true."""
    rng = np.random.default_rng(seed)
    values = []
    for i in model.inputs:
        operand = model.operands[i]
        if operand.type == OperandType.TENSOR_BOOL8:
            values.append(np.ones(operand.dimensions, np.bool_))
        elif operand.type == OperandType.TENSOR_FLOAT32:
            values.append(rng.uniform(0.5, 2.0, operand.dimensions).astype(np.float32))
        else:
            info = operand.info
            values.append(rng.integers(0, 255, operand.dimensions).astype(info.dtype))
    return values

SAMPLES = tuple(shipped_profile_names())
PREFERENCES = tuple(PreferenceCode)
# Compilation_create's devices (every sample driver, the CPU last), each driver with the CPU,
# and each driver alone (createForDevices).
DEVICE_LISTS = [(*SAMPLES, oracle.CPU), *((s, oracle.CPU) for s in SAMPLES),
                *((s,) for s in SAMPLES), (oracle.CPU,)]


def profiles(names: Sequence[str]) -> list[DeviceProfile]:
    return [reference_profile("test") if n == oracle.CPU else shipped_profile(n) for n in names]


def as_oracle(steps: Sequence[Step]) -> list[Any]:
    return [(s.device, frozenset(s.operations),
             tuple((c.role, as_oracle(c.plan.steps)) for c in s.called)) for s in steps]


def check_against_oracle(model: Model, where: str) -> None:
    """Every device's supported operations and every plan, for each preference and device
    list, with and without the CPU fallback, as the oracle says."""
    spec = oracle.as_spec(model)
    for name in (*SAMPLES, oracle.CPU):
        assert supported_operations(profiles([name])[0], model) == oracle.supported(name, spec), \
            f"{where}: {name}"
    for names in DEVICE_LISTS:
        for preference in PREFERENCES:
            for fallback in (True, False):
                expected = oracle.plan(spec, list(names), preference, fallback)
                try:
                    got: Any = as_oracle(plan(model, profiles(names), preference,
                                              fallback=fallback).steps)
                except NnapiError as e:
                    got = type(e).__name__
                assert got == expected, f"{where}: {names} {preference.name} {fallback}"
