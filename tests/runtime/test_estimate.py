"""Estimated step times: the profiles' execTime times the operations' arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import Model, OperandType, OperationType, PreferenceCode
from torch_nnapi.nnapi.devices import reference_profile, shipped_profile
from torch_nnapi.runtime.estimate import CpuBaseline, estimate, example_sizes, operation_work
from torch_nnapi.runtime.partitioning import plan

from .partition_support import chain

F32 = OperandType.TENSOR_FLOAT32


def _fully_connected(batch: int, inputs: int, units: int) -> Model:
    m = Model()
    x = m.add_operand(F32, (batch, inputs))
    w = m.add_constant(F32, np.ones((units, inputs), np.float32))
    b = m.add_constant(F32, np.zeros(units, np.float32))
    y = m.add_operand(F32, (batch, units))
    m.add_operation(OperationType.FULLY_CONNECTED, [x, w, b, m.add_scalar(OperandType.INT32, 0)],
                    [y])
    m.identify_inputs_and_outputs([x], [y])
    return m.finish()


def test_a_fully_connected_layer_counts_its_dot_products_and_its_tensors():
    work = operation_work(_fully_connected(2, 8, 3), 0)
    assert work.multiply_adds == 2 * 3 * 8
    assert work.bytes_moved == 4 * (2 * 8 + 3 * 8 + 3 + 2 * 3)
    assert operation_work(chain([OperationType.ADD], (5,)), 0).multiply_adds == 5


def test_a_step_costs_its_devices_exec_time_times_the_work_plus_its_copies():
    model = chain([OperationType.ADD, OperationType.MAXIMUM, OperationType.ADD], (1000,))
    devices = [shipped_profile("nnapi-sample_minimal"), reference_profile()]
    made = plan(model, devices, PreferenceCode.SUSTAINED_SPEED)
    assert [s.device for s in made.steps] == ["nnapi-sample_minimal", "nnapi-reference",
                                              "nnapi-sample_minimal"]
    baseline = CpuBaseline(macs_per_second=1e6, bytes_per_second=1e6)
    guess = estimate(made, model, devices, baseline)
    add = operation_work(model, 0)
    one_add = 0.4 * (add.multiply_adds / 1e6 + add.bytes_moved / 1e6)
    assert guess.steps[0].seconds == pytest.approx(one_add)
    assert guess.steps[0].copy_seconds == 0
    assert guess.steps[1].copy_seconds == pytest.approx(4000 / 1e6)  # the first ADD's result
    on_cpu, total, share = guess.steps[1].seconds, guess.seconds, guess.reference_share
    assert on_cpu is not None and total is not None and share is not None
    assert share == pytest.approx(on_cpu / total)
    assert 0 < share < 1


def test_tensors_of_unknown_size_make_the_estimate_unknown_with_the_reason():
    model = chain([OperationType.ADD, OperationType.MAXIMUM, OperationType.ADD], (0,),
                  unknown_middle=True)
    devices = [shipped_profile("nnapi-sample_minimal"), reference_profile()]
    made = plan(model, devices, PreferenceCode.SUSTAINED_SPEED)
    guess = estimate(made, model, devices)
    assert all(s.seconds is None and s.copy_seconds is None for s in guess.steps)
    assert guess.seconds is None and guess.reference_share is None
    assert guess.steps[0].unknown == ("operation 0 (ADD): input 0, operand 0 TENSOR_FLOAT32[?],"
                                      " has a size unknown without example inputs")
    assert guess.unknown == f"step 0: {guess.steps[0].unknown}"
    work = operation_work(model, 1)
    assert (work.multiply_adds, work.bytes_moved) == (0, 0)
    assert work.unknown.startswith("operation 1 (MAXIMUM): input 0, operand 2")


def test_the_example_inputs_sizes_make_it_known_as_for_declared_sizes():
    devices = [shipped_profile("nnapi-sample_minimal"), reference_profile()]
    operations = [OperationType.ADD, OperationType.MAXIMUM, OperationType.ADD]
    model = chain(operations, (0,), unknown_middle=True)
    sizes = example_sizes(model, [np.ones(1000, np.float32), np.ones(1000, np.float32)])
    assert sizes[2] == (1000,)  # the first ADD's result, of unknown size in the model
    declared = chain(operations, (1000,))
    for index in range(3):
        assert operation_work(model, index, sizes) == operation_work(declared, index)
    made = plan(model, devices, PreferenceCode.SUSTAINED_SPEED)
    baseline = CpuBaseline(macs_per_second=1e6, bytes_per_second=1e6)
    guess = estimate(made, model, devices, baseline, sizes)
    works = [operation_work(declared, index) for index in range(3)]
    seconds = sum(w.multiply_adds / 1e6 + w.bytes_moved / 1e6 for w in works)
    assert guess.unknown == "" and guess.seconds == pytest.approx(seconds)
    assert example_sizes(declared, []) == {}  # nothing unknown: nothing run
