"""Partitioned plans run step by step on the host runtime, computing what the whole model
computes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from torch_nnapi.nnapi import Model, OperationType, PreferenceCode
from torch_nnapi.nnapi.errors import OpFailedError
from torch_nnapi.runtime import Compilation
from torch_nnapi.runtime.partitioned import (
    PartitionedCompilation,
    compile_for_devices,
    step_model,
)

from .partition_support import DEVICE_LISTS, chain, if_model, inputs_for, profiles

ADD, MUL, SUB = OperationType.ADD, OperationType.MUL, OperationType.SUB
# The device lists that run every operation: those with the CPU, and the driver of them all.
RUNNABLE = [*(names for names in DEVICE_LISTS if "nnapi-reference" in names),
            ("nnapi-sample_all",)]


def assert_partitioned_runs_equal(model: Model, lists: Sequence[Sequence[str]] = RUNNABLE,
                                  seeds: int = 2) -> int:
    """Runs ``model`` through every plan (each device list and preference, with the CPU
    fallback) and compares each output with the whole model's, exactly; returns how many
    plans had several steps."""
    whole = Compilation(model)
    several = 0
    for names in lists:
        for preference in PreferenceCode:
            compiled, the_plan = compile_for_devices(model, profiles(names), preference)
            several += isinstance(compiled, PartitionedCompilation)
            assert isinstance(compiled, PartitionedCompilation) == (len(the_plan.steps) > 1)
            for seed in range(seeds):
                inputs = inputs_for(model, seed)
                execution = compiled.create_execution()
                for i, value in enumerate(inputs):
                    execution.set_input(i, value)
                got = execution.compute().outputs
                for a, b in zip(got, whole.run(inputs).outputs, strict=True):
                    np.testing.assert_array_equal(a, b, err_msg=f"{names} {preference.name}")
    return several


@pytest.mark.parametrize("model", [chain([ADD, MUL, ADD]), chain([MUL, ADD, MUL, ADD, SUB]),
                                   if_model([ADD, MUL], [MUL])],
                         ids=["add-mul-add", "five", "if"])
def test_partitioned_runs_equal_the_whole_model(model):
    several = assert_partitioned_runs_equal(model)
    # An IF alone is one step (the interpreter's); the chains alternate between devices.
    assert several > 0 or model.operations[0].type is OperationType.IF


def test_a_multi_step_plan_is_compiled_step_by_step():
    model = chain([ADD, MUL, ADD])
    compiled, the_plan = compile_for_devices(model, profiles(["nnapi-sample_minimal",
                                                              "nnapi-reference"]))
    assert isinstance(compiled, PartitionedCompilation)
    assert [len(s.compilation.model.operations) for s in compiled.parts] == [1, 1, 1]
    middle = step_model(model, the_plan.steps[1])
    assert [o.type for o in middle.operations] == [MUL]
    assert len(middle.inputs) == 2 and len(middle.outputs) == 1


def test_an_unknown_size_falls_back_or_fails_as_on_android():
    model = chain([ADD, MUL, ADD], unknown_middle=True)
    names = profiles(["nnapi-sample_minimal", "nnapi-reference"])
    compiled, the_plan = compile_for_devices(model, names)
    assert not isinstance(compiled, PartitionedCompilation) and the_plan.fallback
    with pytest.raises(OpFailedError, match="unknown size"):
        compile_for_devices(model, names, fallback=False)


def test_executions_check_their_inputs_and_run_once():
    compiled, _ = compile_for_devices(chain([ADD, MUL, ADD]),
                                      profiles(["nnapi-sample_minimal", "nnapi-reference"]))
    execution = compiled.create_execution()
    with pytest.raises(ValueError, match="model input 0"):
        execution.set_input(0, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"model inputs \[1\] were not set"):
        execution.compute()
    execution.set_input(0, np.ones(2, np.float32))
    execution.set_input(1, np.ones(2, np.float32))
    np.testing.assert_array_equal(execution.compute().outputs[0], [3, 3])
    with pytest.raises(RuntimeError, match="computes only once"):
        execution.compute()
