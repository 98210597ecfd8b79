"""IF and WHILE on the host runtime: the called models run on the operation's inputs, tensors
of unknown shape flow through, a runaway loop ends with MissedDeadlineError (never a hang),
and every called model compiles once with its caller's settings."""

from __future__ import annotations

import time

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    FuseCode,
    MissedDeadlineError,
    Model,
    OperandType,
    OperationType,
)
from torch_nnapi.runtime import Compilation

F32 = OperandType.TENSOR_FLOAT32
I32 = OperandType.TENSOR_INT32
BOOL8 = OperandType.TENSOR_BOOL8
Op = OperationType


def _binary(op: Op, constant: float, dims=(0,), operand_type=F32) -> Model:
    """out = x (op) constant, of any length when ``dims`` has zeros (finished)."""
    m = Model()
    x = m.add_operand(operand_type, dims)
    value = np.array([constant], np.float32 if operand_type == F32 else np.int32)
    c = m.add_constant(operand_type, value)
    fuse = m.add_scalar(OperandType.INT32, FuseCode.NONE)
    out = m.add_operand(operand_type, dims)
    m.add_operation(op, [x, c, fuse], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


def _if_model(then_model: Model, else_model: Model, dims=(0,)) -> Model:
    m = Model()
    condition = m.add_operand(BOOL8, (1,))
    refs = [m.add_model_operand(then_model), m.add_model_operand(else_model)]
    x, out = m.add_operand(F32, dims), m.add_operand(F32, dims)
    m.add_operation(Op.IF, [condition, *refs, x], [out])
    m.identify_inputs_and_outputs([condition, x], [out])
    return m.finish()


@pytest.mark.parametrize("condition, expected", [(True, [11.0, 12.0]), (False, [-9.0, -8.0])])
def test_if_runs_the_branch_the_condition_chooses(condition, expected):
    compilation = Compilation(_if_model(_binary(Op.ADD, 10), _binary(Op.SUB, 10)))
    result = compilation.run([np.array([condition]), np.array([1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(result.outputs[0], expected)


def test_if_outputs_of_unknown_shape_take_the_branch_result():
    compilation = Compilation(_if_model(_binary(Op.ADD, 1), _binary(Op.ADD, 2)))
    for length in (1, 5):
        x = np.arange(length, dtype=np.float32)
        out = compilation.run([np.array([1], np.uint8), x]).outputs[0]
        np.testing.assert_array_equal(out, x + 1)


def test_a_model_called_twice_compiles_once_with_the_callers_relaxation():
    branch = _binary(Op.ADD, 1)
    caller = Model()
    condition = caller.add_operand(BOOL8, (1,))
    refs = [caller.add_model_operand(branch), caller.add_model_operand(branch)]
    x, out = caller.add_operand(F32, (0,)), caller.add_operand(F32, (0,))
    caller.add_operation(Op.IF, [condition, *refs, x], [out])
    caller.identify_inputs_and_outputs([condition, x], [out])
    caller.relax_computation_float32_to_float16(True)
    compilation = Compilation(caller.finish(), relaxed_precision="float16")
    first, second = (compilation._constants[i] for i in refs)
    assert first is second and first.relax and first.emulate_float16
    result = compilation.run([np.array([0], np.uint8), np.array([0.1], np.float32)]).outputs[0]
    assert result[0] == np.float32(np.float16(1.1))


def _counting_loop(limit: int, step: int = 1) -> Model:
    """while i < limit: i = i + step (int32 [1]); returns i."""
    condition = Model()
    i = condition.add_operand(I32, (1,))
    bound = condition.add_constant(I32, np.array([limit], np.int32))
    below = condition.add_operand(BOOL8, (1,))
    condition.add_operation(Op.LESS, [i, bound], [below])
    condition.identify_inputs_and_outputs([i], [below])
    m = Model()
    refs = [m.add_model_operand(condition.finish()),
            m.add_model_operand(_binary(Op.ADD, step, (1,), I32))]
    start, result = m.add_operand(I32, (1,)), m.add_operand(I32, (1,))
    m.add_operation(Op.WHILE, [*refs, start], [result])
    m.identify_inputs_and_outputs([start], [result])
    return m.finish()


def test_while_feeds_the_body_outputs_back_until_the_condition_is_false():
    compilation = Compilation(_counting_loop(10, 3))
    assert compilation.run([np.array([0], np.int32)]).outputs[0].tolist() == [12]
    assert compilation.run([np.array([50], np.int32)]).outputs[0].tolist() == [50]


def test_while_with_state_and_input_only_values():
    """Fibonacci: (n, a, b) with n counted down as input-output, b as state, one
    input-only step; returns n and a."""
    condition = Model()
    n, a, b, step = (condition.add_operand(I32, (1,)) for _ in range(4))
    zero = condition.add_constant(I32, np.array([0], np.int32))
    go = condition.add_operand(BOOL8, (1,))
    condition.add_operation(Op.GREATER, [n, zero], [go])
    condition.identify_inputs_and_outputs([n, a, b, step], [go])
    body = Model()
    n, a, b, step = (body.add_operand(I32, (1,)) for _ in range(4))
    fuse = body.add_scalar(OperandType.INT32, 0)
    n_out, a_out, b_out = (body.add_operand(I32, (1,)) for _ in range(3))
    body.add_operation(Op.SUB, [n, step, fuse], [n_out])
    body.add_operation(Op.ADD, [a, b, fuse], [b_out])
    body.add_operation(Op.ADD, [b, body.add_constant(I32, np.zeros(1, np.int32)), fuse],
                       [a_out])
    body.identify_inputs_and_outputs([n, a, b, step], [n_out, a_out, b_out])
    m = Model()
    refs = [m.add_model_operand(condition.finish()), m.add_model_operand(body.finish())]
    ins = [m.add_operand(I32, (1,)) for _ in range(4)]
    outs = [m.add_operand(I32, (1,)) for _ in range(2)]
    m.add_operation(Op.WHILE, [*refs, *ins], outs)
    m.identify_inputs_and_outputs(ins, outs)
    one = np.array([1], np.int32)
    result = Compilation(m.finish()).run([np.array([10], np.int32), 0 * one, one, one])
    assert [r.tolist() for r in result.outputs] == [[0], [55]]


def test_an_infinite_loop_ends_with_missed_deadline_at_the_loop_timeout():
    execution = Compilation(_counting_loop(10, 0)).create_execution()  # i never grows
    execution.set_input(0, np.array([0], np.int32))
    execution.set_loop_timeout(50_000_000)  # 50 ms
    start = time.monotonic()
    with pytest.raises(MissedDeadlineError, match=r"operation 0 \(WHILE\): the loop ran .*"
                                                  r" longer than the loop timeout of 0.05 s"):
        execution.compute()
    assert time.monotonic() - start < 5


def test_the_loop_timeout_is_capped_at_its_maximum():
    execution = Compilation(_counting_loop(3)).create_execution()
    execution.set_loop_timeout(10**12)
    assert execution.loop_timeout_ns == 15 * 10**9


def test_an_execution_timeout_stops_a_loop_too():
    execution = Compilation(_counting_loop(10, 0)).create_execution()
    execution.set_input(0, np.array([0], np.int32))
    execution.set_timeout(30_000_000)  # 30 ms, well under the 2 s loop timeout
    with pytest.raises(MissedDeadlineError, match="ran past its timeout"):
        execution.compute()
