"""The functions API level 30 added, through the C library: memory descriptors and the memory
made from them, copies, priorities and timeouts, loop timeouts, events with dependencies and
sync fences, and the device's wait."""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
from ctypes import byref, c_void_p

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    DEFAULT_LOOP_TIMEOUT_NS,
    MAXIMUM_LOOP_TIMEOUT_NS,
    DurationCode,
    OperandType,
    OperationType,
    PriorityCode,
    ResultCode,
)

from .clib import (
    add_then_multiply_model,
    binary_model,
    bind,
    compile_model,
    expect,
    host_device,
    new_execution,
    operand_type,
    u32,
)

NULL_ = ResultCode.UNEXPECTED_NULL
BAD_DATA = ResultCode.BAD_DATA
BAD_STATE = ResultCode.BAD_STATE
A = np.array([1, 2, 3, 4], np.float32)
B = np.array([10, 20, 30, 40], np.float32)


@pytest.fixture(scope="module")
def add(lib) -> c_void_p:
    """A finished compilation of out = a + b on 4 floats, for the host device alone."""
    return compile_model(lib, binary_model(lib), host_device(lib))


def _desc(lib, roles, dimensions=None, finish: bool = True) -> c_void_p:
    """A memory descriptor with ``roles``: (compilation, "input"/"output", index)."""
    desc = c_void_p()
    expect(lib.ANeuralNetworksMemoryDesc_create(byref(desc)))
    for compilation, direction, index in roles:
        add_role = (lib.ANeuralNetworksMemoryDesc_addInputRole if direction == "input"
                    else lib.ANeuralNetworksMemoryDesc_addOutputRole)
        expect(add_role(desc, compilation, index, 1.0))
    if dimensions is not None:
        expect(lib.ANeuralNetworksMemoryDesc_setDimensions(desc, len(dimensions),
                                                           u32(*dimensions)))
    if finish:
        expect(lib.ANeuralNetworksMemoryDesc_finish(desc))
    return desc


def _memory_from(lib, desc) -> c_void_p:
    memory = c_void_p()
    expect(lib.ANeuralNetworksMemory_createFromDesc(desc, byref(memory)))
    return memory


def test_memory_from_a_descriptor_carries_an_output_to_the_next_input(lib, add):
    """out = a + b into device memory, then that memory as input a of the next execution."""
    desc = _desc(lib, [(add, "output", 0), (add, "input", 0)])
    memory = _memory_from(lib, desc)
    lib.ANeuralNetworksMemoryDesc_free(desc)  # the memory outlives its descriptor
    first = new_execution(lib, add)
    b = B.copy()
    expect(lib.ANeuralNetworksExecution_setInput(first, 0, None, A.ctypes.data, A.nbytes))
    expect(lib.ANeuralNetworksExecution_setInput(first, 1, None, b.ctypes.data, b.nbytes))
    expect(lib.ANeuralNetworksExecution_setOutputFromMemory(first, 0, None, memory, 0, 0))
    expect(lib.ANeuralNetworksExecution_compute(first))
    second = new_execution(lib, add)
    out = np.zeros(4, np.float32)
    expect(lib.ANeuralNetworksExecution_setInputFromMemory(second, 0, None, memory, 0, 0))
    expect(lib.ANeuralNetworksExecution_setInput(second, 1, None, b.ctypes.data, b.nbytes))
    expect(lib.ANeuralNetworksExecution_setOutput(second, 0, None, out.ctypes.data, out.nbytes))
    expect(lib.ANeuralNetworksExecution_compute(second))
    np.testing.assert_array_equal(out, A + 2 * B)
    for handle in (first, second):
        lib.ANeuralNetworksExecution_free(handle)
    lib.ANeuralNetworksMemory_free(memory)


def test_memory_from_a_descriptor_is_bound_only_whole_and_as_declared(lib, add):
    memory = _memory_from(lib, _desc(lib, [(add, "output", 0)]))
    execution = new_execution(lib, add)
    set_input = lib.ANeuralNetworksExecution_setInputFromMemory
    set_output = lib.ANeuralNetworksExecution_setOutputFromMemory
    expect(set_output(execution, 0, None, memory, 0, 16), BAD_DATA)  # not whole
    expect(set_output(execution, 0, None, memory, 4, 0), BAD_DATA)
    expect(set_input(execution, 0, None, memory, 0, 0), BAD_DATA)  # no input role
    other = compile_model(lib, binary_model(lib))
    other_execution = new_execution(lib, other)
    expect(set_output(other_execution, 0, None, memory, 0, 0), BAD_DATA)  # other compilation
    model = binary_model(lib)
    expect(lib.ANeuralNetworksModel_setOperandValueFromMemory(model, 0, memory, 0, 16),
           BAD_STATE)  # finished model; an unfinished one refuses it too:
    unfinished = binary_model(lib, finish=False)
    expect(lib.ANeuralNetworksModel_setOperandValueFromMemory(unfinished, 0, memory, 0, 16),
           BAD_DATA)


def test_memory_from_a_descriptor_must_hold_data_before_it_is_read(lib, add):
    memory = _memory_from(lib, _desc(lib, [(add, "input", 0), (add, "output", 0)]))
    execution = new_execution(lib, add)
    out = np.zeros(4, np.float32)
    b = B.copy()
    expect(lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, memory, 0, 0))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 1, None, b.ctypes.data, b.nbytes))
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, out.ctypes.data,
                                                  out.nbytes))
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_DATA)
    source = _memory_from(lib, _desc(lib, [(add, "input", 0)]))
    expect(lib.ANeuralNetworksMemory_copy(source, memory), BAD_DATA)  # nothing to copy yet


def test_descriptor_roles_and_dimensions_are_checked(lib, add):
    desc = c_void_p()
    expect(lib.ANeuralNetworksMemoryDesc_create(None), NULL_)
    expect(lib.ANeuralNetworksMemoryDesc_create(byref(desc)))
    add_input = lib.ANeuralNetworksMemoryDesc_addInputRole
    expect(lib.ANeuralNetworksMemoryDesc_finish(desc), BAD_DATA)  # no role yet
    expect(add_input(desc, add, 2, 1.0), BAD_DATA)  # the model has 2 inputs
    expect(add_input(desc, add, 0, 0.0), BAD_DATA)  # frequency in (0, 1]
    expect(add_input(desc, add, 0, 1.5), BAD_DATA)
    expect(add_input(desc, None, 0, 1.0), NULL_)
    unfinished = c_void_p()
    expect(lib.ANeuralNetworksCompilation_create(binary_model(lib), byref(unfinished)))
    expect(add_input(desc, unfinished, 0, 1.0), BAD_STATE)
    expect(add_input(desc, add, 0, 0.5))
    expect(add_input(desc, add, 0, 0.5), BAD_DATA)  # the same role twice
    expect(lib.ANeuralNetworksMemoryDesc_setDimensions(desc, 1, u32(5)), BAD_DATA)
    expect(lib.ANeuralNetworksMemoryDesc_setDimensions(desc, 1, None), NULL_)
    expect(lib.ANeuralNetworksMemoryDesc_setDimensions(desc, 1, u32(4)))
    other_shape = compile_model(lib, binary_model(lib, dims=(2, 2)))
    expect(add_input(desc, other_shape, 0, 1.0), BAD_DATA)  # [2, 2] against [4]
    memory = c_void_p()
    expect(lib.ANeuralNetworksMemory_createFromDesc(desc, byref(memory)), BAD_STATE)
    expect(lib.ANeuralNetworksMemoryDesc_finish(desc))
    expect(lib.ANeuralNetworksMemoryDesc_finish(desc), BAD_STATE)
    expect(add_input(desc, add, 1, 1.0), BAD_STATE)
    expect(lib.ANeuralNetworksMemory_createFromDesc(desc, byref(memory)))
    lib.ANeuralNetworksMemoryDesc_free(desc)
    lib.ANeuralNetworksMemoryDesc_free(None)


def test_memory_of_unknown_dimensions_cannot_be_made(lib):
    dynamic = compile_model(lib, binary_model(lib, dims=(0,)))
    desc = _desc(lib, [(dynamic, "output", 0)])
    memory = c_void_p()
    expect(lib.ANeuralNetworksMemory_createFromDesc(desc, byref(memory)), ResultCode.OP_FAILED)
    assert memory.value is None
    sized = _desc(lib, [(dynamic, "output", 0)], dimensions=(3,))
    expect(lib.ANeuralNetworksMemory_createFromDesc(sized, byref(memory)))


@pytest.fixture
def shared_file(tmp_path):
    path = tmp_path / "memory.bin"
    path.write_bytes(bytes(mmap.PAGESIZE))
    fd = os.open(path, os.O_RDWR)
    yield fd
    os.close(fd)


def _fd_memory(lib, fd: int, size: int) -> c_void_p:
    memory = c_void_p()
    expect(lib.ANeuralNetworksMemory_createFromFd(size, mmap.PROT_READ | mmap.PROT_WRITE, fd, 0,
                                                  byref(memory)))
    return memory


def test_memory_copy_between_a_file_and_a_descriptor_memory(lib, add, shared_file):
    device = _memory_from(lib, _desc(lib, [(add, "input", 0)]))
    mapped = _fd_memory(lib, shared_file, 16)
    os.pwrite(shared_file, A.tobytes(), 0)
    expect(lib.ANeuralNetworksMemory_copy(mapped, device))
    execution = new_execution(lib, add)
    out, b = np.zeros(4, np.float32), B.copy()
    expect(lib.ANeuralNetworksExecution_setInputFromMemory(execution, 0, None, device, 0, 0))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 1, None, b.ctypes.data, b.nbytes))
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, out.ctypes.data,
                                                  out.nbytes))
    expect(lib.ANeuralNetworksExecution_compute(execution))
    np.testing.assert_array_equal(out, A + B)
    back = _fd_memory(lib, shared_file, 16)
    os.pwrite(shared_file, bytes(16), 0)
    expect(lib.ANeuralNetworksMemory_copy(device, back))
    assert os.pread(shared_file, 16, 0) == A.tobytes()
    expect(lib.ANeuralNetworksMemory_copy(_fd_memory(lib, shared_file, 32), device), BAD_DATA)
    expect(lib.ANeuralNetworksMemory_copy(None, device), NULL_)


def test_priority_and_timeouts(lib):
    device = host_device(lib)
    compilation = c_void_p()
    devices = (c_void_p * 1)(device)
    model = binary_model(lib)
    expect(lib.ANeuralNetworksCompilation_createForDevices(model, devices, 1, byref(compilation)))
    for priority in PriorityCode:
        expect(lib.ANeuralNetworksCompilation_setPriority(compilation, priority))
    expect(lib.ANeuralNetworksCompilation_setPriority(compilation, 95), BAD_DATA)
    expect(lib.ANeuralNetworksCompilation_setTimeout(compilation, 10**10))
    expect(lib.ANeuralNetworksCompilation_finish(compilation))
    expect(lib.ANeuralNetworksCompilation_setPriority(compilation, PriorityCode.LOW), BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_setTimeout(compilation, 0), BAD_STATE)
    execution = new_execution(lib, compilation)
    expect(lib.ANeuralNetworksExecution_setTimeout(execution, 10**10))
    expect(lib.ANeuralNetworksExecution_setLoopTimeout(execution, 10**9))
    out = np.zeros(4, np.float32)
    bind(lib, execution, [A.copy(), B.copy()], [out])
    expect(lib.ANeuralNetworksExecution_compute(execution))
    expect(lib.ANeuralNetworksExecution_setTimeout(execution, 1), BAD_STATE)
    expect(lib.ANeuralNetworksExecution_setLoopTimeout(execution, 1), BAD_STATE)
    expect(lib.ANeuralNetworksExecution_setLoopTimeout(None, 1), NULL_)
    any_device = compile_model(lib, binary_model(lib))  # not created for one device
    expect(lib.ANeuralNetworksExecution_setTimeout(new_execution(lib, any_device), 5), BAD_DATA)
    unfinished = c_void_p()
    expect(lib.ANeuralNetworksCompilation_create(binary_model(lib), byref(unfinished)))
    expect(lib.ANeuralNetworksCompilation_setTimeout(unfinished, 5), BAD_DATA)


def test_an_execution_past_its_timeout_fails_with_missed_deadline(lib, add):
    """A 1 ns timeout has passed by the time the first operation would start."""
    execution = new_execution(lib, add)
    expect(lib.ANeuralNetworksExecution_setTimeout(execution, 1))
    bind(lib, execution, [A.copy(), B.copy()], [np.zeros(4, np.float32)])
    expect(lib.ANeuralNetworksExecution_compute(execution), ResultCode.MISSED_DEADLINE_TRANSIENT)


def test_loop_timeout_values(lib):
    assert lib.ANeuralNetworks_getDefaultLoopTimeout() == DEFAULT_LOOP_TIMEOUT_NS == 2 * 10**9
    assert lib.ANeuralNetworks_getMaximumLoopTimeout() == MAXIMUM_LOOP_TIMEOUT_NS == 15 * 10**9


def _bind_typed(lib, execution, inputs, outputs) -> None:
    """Binds float32 arrays with a type giving their dimensions (for models that leave them
    unknown)."""
    for direction, arrays in (("Input", inputs), ("Output", outputs)):
        set_buffer = getattr(lib, f"ANeuralNetworksExecution_set{direction}")
        for i, array in enumerate(arrays):
            t = operand_type(OperandType.TENSOR_FLOAT32, array.shape)
            expect(set_buffer(execution, i, byref(t), array.ctypes.data, array.nbytes))


def _start(lib, compilation, inputs, outputs, dependencies=(), duration: int = 0):
    execution = new_execution(lib, compilation)
    _bind_typed(lib, execution, inputs, outputs)
    event = c_void_p()
    waits = (c_void_p * max(len(dependencies), 1))(*dependencies)
    code = lib.ANeuralNetworksExecution_startComputeWithDependencies(
        execution, waits, len(dependencies), duration, byref(event))
    return code, event


def test_start_compute_with_dependencies_chains_executions(lib, add):
    middle, out = np.zeros(4, np.float32), np.zeros(4, np.float32)
    # Buffers stay alive until the executions end (NNAPI reads them when it computes).
    first_inputs, second_inputs = [A.copy(), B.copy()], [middle, B.copy()]
    code, first = _start(lib, add, first_inputs, [middle])
    expect(code)
    code, second = _start(lib, add, second_inputs, [out], dependencies=[first],
                          duration=10**10)
    expect(code)
    expect(lib.ANeuralNetworksEvent_wait(second))
    np.testing.assert_array_equal(out, A + 2 * B)
    fd = ctypes.c_int(7)
    expect(lib.ANeuralNetworksEvent_getSyncFenceFd(second, byref(fd)), BAD_DATA)
    assert fd.value == -1  # the host's executions have no sync fence
    for event in (first, second):
        lib.ANeuralNetworksEvent_free(event)


def test_start_compute_with_dependencies_is_checked(lib, add):
    dynamic = compile_model(lib, binary_model(lib, dims=(0,)))
    execution = new_execution(lib, dynamic)
    a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
    _bind_typed(lib, execution, [a, b], [])
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, out.ctypes.data,
                                                  out.nbytes))
    event = c_void_p()
    expect(lib.ANeuralNetworksExecution_startComputeWithDependencies(execution, None, 0, 0,
                                                                     byref(event)), BAD_DATA)
    assert event.value is None  # outputs must be fully specified
    any_device = compile_model(lib, binary_model(lib))
    code, _ = _start(lib, any_device, [A.copy(), B.copy()], [np.zeros(4, np.float32)],
                     duration=5)
    expect(code, BAD_DATA)  # a duration needs one device
    execution = new_execution(lib, add)
    event = c_void_p()
    expect(lib.ANeuralNetworksExecution_startComputeWithDependencies(
        execution, (c_void_p * 1)(c_void_p(12345)), 1, 0, byref(event)), BAD_DATA)


def test_a_failed_dependency_fails_the_execution(lib):
    """Inputs of mismatched shapes make the first execution fail once a fence (a pipe) lets it
    start; the second, which waits for it, fails without running. Once the first is known to
    have failed, it is refused as a dependency."""
    read_end, write_end = os.pipe()
    fence = c_void_p()
    expect(lib.ANeuralNetworksEvent_createFromSyncFenceFd(read_end, byref(fence)))
    dynamic = compile_model(lib, binary_model(lib, dims=(0,), output_dims=(4,)))
    # Buffers stay alive until the executions end (NNAPI reads them when it computes).
    failing_inputs, failing_outputs = [A.copy(), np.zeros(3, np.float32)], \
        [np.zeros(4, np.float32)]
    code, failing = _start(lib, dynamic, failing_inputs, failing_outputs, dependencies=[fence])
    expect(code)
    out = np.full(4, 9, np.float32)
    add = compile_model(lib, binary_model(lib))
    waiting_inputs = [A.copy(), B.copy()]
    code, waiting = _start(lib, add, waiting_inputs, [out], dependencies=[failing])
    expect(code)
    os.write(write_end, b"x")
    assert lib.ANeuralNetworksEvent_wait(failing) == BAD_DATA
    expect(lib.ANeuralNetworksEvent_wait(waiting), ResultCode.OP_FAILED)
    assert (out == 9).all()
    code, _ = _start(lib, add, [A.copy(), B.copy()], [out], dependencies=[failing])
    expect(code, BAD_DATA)
    for handle in (waiting, failing, fence):
        lib.ANeuralNetworksEvent_free(handle)
    for fd in (read_end, write_end):
        os.close(fd)


def test_an_event_from_a_file_descriptor_signals_when_it_is_readable(lib, add):
    """A pipe stands in for a sync fence: the execution starts once a byte is written."""
    read_end, write_end = os.pipe()
    fence = c_void_p()
    expect(lib.ANeuralNetworksEvent_createFromSyncFenceFd(read_end, byref(fence)))
    os.close(read_end)  # the event keeps its own duplicate
    out, inputs = np.zeros(4, np.float32), [A.copy(), B.copy()]  # alive until it computes
    code, event = _start(lib, add, inputs, [out], dependencies=[fence])
    expect(code)
    threading.Timer(0.05, os.write, (write_end, b"x")).start()
    expect(lib.ANeuralNetworksEvent_wait(event))
    np.testing.assert_array_equal(out, A + B)
    fd = ctypes.c_int(-5)
    expect(lib.ANeuralNetworksEvent_getSyncFenceFd(fence, byref(fd)))
    assert fd.value >= 0
    os.close(fd.value)
    expect(lib.ANeuralNetworksEvent_wait(fence))
    for handle in (event, fence):
        lib.ANeuralNetworksEvent_free(handle)
    os.close(write_end)
    expect(lib.ANeuralNetworksEvent_createFromSyncFenceFd(-1, byref(fence)), BAD_DATA)
    expect(lib.ANeuralNetworksEvent_createFromSyncFenceFd(write_end, byref(fence)), BAD_DATA)
    expect(lib.ANeuralNetworksEvent_createFromSyncFenceFd(0, None), NULL_)
    expect(lib.ANeuralNetworksEvent_getSyncFenceFd(None, byref(fd)), NULL_)


def test_durations_after_dependencies(lib, add):
    execution = new_execution(lib, add)
    expect(lib.ANeuralNetworksExecution_setMeasureTiming(execution, True))
    bind(lib, execution, [A.copy(), B.copy()], [np.zeros(4, np.float32)])
    event = c_void_p()
    expect(lib.ANeuralNetworksExecution_startComputeWithDependencies(execution, None, 0, 0,
                                                                     byref(event)))
    expect(lib.ANeuralNetworksEvent_wait(event))
    duration = ctypes.c_uint64()
    for code in DurationCode:
        expect(lib.ANeuralNetworksExecution_getDuration(execution, code, byref(duration)))
        assert 0 < duration.value < 10**10


def test_the_device_is_always_live(lib):
    expect(lib.ANeuralNetworksDevice_wait(host_device(lib)))
    expect(lib.ANeuralNetworksDevice_wait(None), NULL_)
    expect(lib.ANeuralNetworksDevice_wait(c_void_p(4096)), BAD_DATA)


def test_set_operand_value_from_model_is_checked(lib):
    referenced = add_then_multiply_model(lib)
    model = c_void_p()
    expect(lib.ANeuralNetworksModel_create(byref(model)))
    for t in (operand_type(OperandType.MODEL), operand_type(OperandType.TENSOR_FLOAT32, (4,))):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, referenced))
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 1, referenced), BAD_DATA)
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, model), BAD_DATA)
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 9, referenced), BAD_DATA)
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, None), NULL_)
    unfinished = binary_model(lib, OperationType.ADD, finish=False)
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, unfinished), BAD_DATA)
    value = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 0, byref(value), 4), BAD_DATA)


def _loop_model(lib, step: int) -> c_void_p:
    """while i < 10: i = i + step on an int32 [1], through setOperandValueFromModel."""
    t_i32, t_bool = operand_type(OperandType.TENSOR_INT32, (1,)), \
        operand_type(OperandType.TENSOR_BOOL8, (1,))

    def model_of(types, values, operations, inputs, outputs):
        model = c_void_p()
        expect(lib.ANeuralNetworksModel_create(byref(model)))
        for t in types:
            expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
        for index, value in values.items():
            expect(lib.ANeuralNetworksModel_setOperandValue(model, index, value.ctypes.data,
                                                            value.nbytes))
        for code, ins, outs in operations:
            expect(lib.ANeuralNetworksModel_addOperation(model, code, len(ins), u32(*ins),
                                                         len(outs), u32(*outs)))
        expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            model, len(inputs), u32(*inputs), len(outputs), u32(*outputs)))
        expect(lib.ANeuralNetworksModel_finish(model))
        return model

    keep = [np.array([10], np.int32), np.array([step], np.int32), np.array([0], np.int32)]
    condition = model_of([t_i32, t_i32, t_bool], {1: keep[0]},
                         [(OperationType.LESS, (0, 1), (2,))], [0], [2])
    body = model_of([t_i32, t_i32, operand_type(OperandType.INT32), t_i32],
                    {1: keep[1], 2: keep[2]}, [(OperationType.ADD, (0, 1, 2), (3,))], [0], [3])
    loop = c_void_p()
    expect(lib.ANeuralNetworksModel_create(byref(loop)))
    for t in (operand_type(OperandType.MODEL), operand_type(OperandType.MODEL), t_i32, t_i32):
        expect(lib.ANeuralNetworksModel_addOperand(loop, byref(t)))
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(loop, 0, condition))
    expect(lib.ANeuralNetworksModel_setOperandValueFromModel(loop, 1, body))
    expect(lib.ANeuralNetworksModel_addOperation(loop, OperationType.WHILE, 3, u32(0, 1, 2), 1,
                                                 u32(3)))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(loop, 1, u32(2), 1, u32(3)))
    expect(lib.ANeuralNetworksModel_finish(loop))
    return compile_model(lib, loop)


def test_a_while_loop_through_the_library(lib):
    start, result = np.array([1], np.int32), np.zeros(1, np.int32)
    execution = new_execution(lib, _loop_model(lib, 4))
    bind(lib, execution, [start], [result])
    expect(lib.ANeuralNetworksExecution_compute(execution))
    assert result.tolist() == [13]


def test_an_infinite_loop_ends_with_missed_deadline_at_the_loop_timeout(lib):
    start, result = np.array([1], np.int32), np.zeros(1, np.int32)
    execution = new_execution(lib, _loop_model(lib, 0))  # never reaches 10
    bind(lib, execution, [start], [result])
    expect(lib.ANeuralNetworksExecution_setLoopTimeout(execution, 20_000_000))  # 20 ms
    expect(lib.ANeuralNetworksExecution_compute(execution), ResultCode.MISSED_DEADLINE_TRANSIENT)
