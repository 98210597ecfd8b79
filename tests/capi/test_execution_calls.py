"""Compilations, executions, events, bursts and memory through the C library: the state
machine, documented codes for misuse, dynamic shapes and OUTPUT_INSUFFICIENT_SIZE, timing."""

from __future__ import annotations

import ctypes
import mmap
import os
from ctypes import byref, c_void_p

import numpy as np
import pytest

from torch_nnapi.nnapi import DurationCode, OperandType, OperationType, ResultCode

from .clib import (
    binary_model,
    bind,
    compile_model,
    expect,
    host_device,
    new_execution,
    operand_type,
    run_binary,
)

NULL_ = ResultCode.UNEXPECTED_NULL
BAD_DATA = ResultCode.BAD_DATA
BAD_STATE = ResultCode.BAD_STATE
INSUFFICIENT = ResultCode.OUTPUT_INSUFFICIENT_SIZE
UINT64_MAX = 2**64 - 1
A = np.array([1, 2, 3, 4], np.float32)
B = np.array([10, 20, 30, 40], np.float32)


@pytest.fixture(scope="module")
def add(lib) -> c_void_p:
    """A finished compilation of out = a + b on 4 floats."""
    return compile_model(lib, binary_model(lib))


def test_compilation_state_machine(lib):
    unfinished_model = binary_model(lib, finish=False)
    compilation = c_void_p()
    expect(lib.ANeuralNetworksCompilation_create(unfinished_model, byref(compilation)),
           BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_create(None, byref(compilation)), NULL_)
    model = binary_model(lib)
    expect(lib.ANeuralNetworksCompilation_create(model, None), NULL_)
    expect(lib.ANeuralNetworksCompilation_create(model, byref(compilation)))
    execution, burst = c_void_p(), c_void_p()
    expect(lib.ANeuralNetworksExecution_create(compilation, byref(execution)), BAD_STATE)
    expect(lib.ANeuralNetworksBurst_create(compilation, byref(burst)), BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_setPreference(compilation, 40), BAD_DATA)
    expect(lib.ANeuralNetworksCompilation_setPreference(compilation, -1), BAD_DATA)
    expect(lib.ANeuralNetworksCompilation_setPreference(None, 0), NULL_)
    expect(lib.ANeuralNetworksCompilation_setPreference(compilation, 0))
    token = (ctypes.c_uint8 * 32)(*range(32))
    expect(lib.ANeuralNetworksCompilation_setCaching(compilation, b"/tmp", None), NULL_)
    expect(lib.ANeuralNetworksCompilation_setCaching(compilation, None, token), NULL_)
    expect(lib.ANeuralNetworksCompilation_setCaching(None, b"/tmp", token), NULL_)
    expect(lib.ANeuralNetworksCompilation_setCaching(compilation, b"/tmp", token))
    expect(lib.ANeuralNetworksCompilation_finish(compilation))
    expect(lib.ANeuralNetworksCompilation_finish(compilation), BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_setPreference(compilation, 1), BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_setCaching(compilation, b"/tmp", token), BAD_STATE)
    expect(lib.ANeuralNetworksCompilation_finish(None), NULL_)
    expect(lib.ANeuralNetworksExecution_create(compilation, None), NULL_)
    expect(lib.ANeuralNetworksExecution_create(None, byref(execution)), NULL_)
    np.testing.assert_array_equal(run_binary(lib, compilation, A, B), A + B)
    lib.ANeuralNetworksCompilation_free(compilation)
    lib.ANeuralNetworksCompilation_free(None)
    expect(lib.ANeuralNetworksExecution_create(compilation, byref(execution)), BAD_DATA)


def test_create_for_devices_checks_the_device_list(lib):
    model, device = binary_model(lib), host_device(lib)
    compilation = c_void_p()
    call = lib.ANeuralNetworksCompilation_createForDevices
    expect(call(model, (c_void_p * 1)(device), 0, byref(compilation)), BAD_DATA)
    expect(call(model, (c_void_p * 2)(device, device), 2, byref(compilation)), BAD_DATA)
    expect(call(model, (c_void_p * 1)(None), 1, byref(compilation)), NULL_)
    expect(call(model, (c_void_p * 1)(model), 1, byref(compilation)), BAD_DATA)
    expect(call(None, (c_void_p * 1)(device), 1, byref(compilation)), NULL_)
    expect(call(model, None, 1, byref(compilation)), NULL_)
    expect(call(model, (c_void_p * 1)(device), 1, None), NULL_)
    np.testing.assert_array_equal(run_binary(lib, compile_model(lib, model, device), A, B), A + B)


def test_set_input_and_output_checks(lib, add):
    execution = new_execution(lib, add)
    a, out = A.copy(), np.zeros(4, np.float32)
    for call, buffer in ((lib.ANeuralNetworksExecution_setInput, a),
                         (lib.ANeuralNetworksExecution_setOutput, out)):
        expect(call(None, 0, None, buffer.ctypes.data, 16), NULL_)
        expect(call(execution, 0, None, None, 16), NULL_)
        expect(call(execution, 0, None, buffer.ctypes.data, 12), BAD_DATA)  # wrong size
        expect(call(execution, 0, None, buffer.ctypes.data, 0), BAD_DATA)
        expect(call(execution, 999, None, buffer.ctypes.data, 16), BAD_DATA)
        expect(call(execution, -1, None, buffer.ctypes.data, 16), BAD_DATA)
        contradicting = operand_type(OperandType.TENSOR_FLOAT32, (2, 2))
        expect(call(execution, 0, byref(contradicting), buffer.ctypes.data, 16), BAD_DATA)
        invalid = operand_type(OperandType.TENSOR_FLOAT32, (4,))
        invalid.dimensions = None  # a count without an array
        expect(call(execution, 0, byref(invalid), buffer.ctypes.data, 16), BAD_DATA)
        bad_quant = operand_type(OperandType.TENSOR_QUANT8_ASYMM, (4,), 0.0, 0)
        expect(call(execution, 0, byref(bad_quant), buffer.ctypes.data, 4), BAD_DATA)
        same = operand_type(OperandType.TENSOR_FLOAT32, (4,))
        expect(call(execution, 0, byref(same), buffer.ctypes.data, 16))


def test_lengths_beyond_the_address_space_and_huge_dimension_counts(lib, add):
    """Fuzzing regressions: a size_t length of 2^63 or more gave OP_FAILED (an internal
    OverflowError), and a dimensionCount of 2^31 with a 4-entry array (a corrupted model
    file can pass that) made the library read past the array and crash."""
    from torch_nnapi.capi.bridge import last_error

    execution = new_execution(lib, add)
    buffer = np.zeros(4, np.float32)
    huge_count = operand_type(OperandType.TENSOR_FLOAT32, (4,))
    huge_count.dimensionCount = 2**31
    for call in (lib.ANeuralNetworksExecution_setInput, lib.ANeuralNetworksExecution_setOutput):
        for length in (2**63, 2**64 - 1):
            expect(call(execution, 0, None, buffer.ctypes.data, length), BAD_DATA)
        expect(call(execution, 0, byref(huge_count), buffer.ctypes.data, 16), BAD_DATA)
        assert "dimensionCount 2147483648 is more than the 6" in last_error()


def test_an_execution_computes_once(lib, add):
    execution = new_execution(lib, add)
    a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_DATA)  # nothing bound yet
    bind(lib, execution, [a], [])
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_DATA)  # input 1 missing
    bind(lib, execution, [a, b], [])
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_DATA)  # no output
    bind(lib, execution, [], [out])
    a[:] = [5, 6, 7, 8]  # inputs are read when computing, not when bound
    expect(lib.ANeuralNetworksExecution_compute(execution))
    np.testing.assert_array_equal(out, a + b)
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_STATE)
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, None, a.ctypes.data, 16),
           BAD_STATE)
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, out.ctypes.data, 16),
           BAD_STATE)
    event, burst = c_void_p(), c_void_p()
    expect(lib.ANeuralNetworksExecution_startCompute(execution, byref(event)), BAD_STATE)
    assert event.value is None
    expect(lib.ANeuralNetworksBurst_create(add, byref(burst)))
    expect(lib.ANeuralNetworksExecution_burstCompute(execution, burst), BAD_STATE)
    expect(lib.ANeuralNetworksExecution_compute(None), NULL_)
    lib.ANeuralNetworksExecution_free(execution)
    lib.ANeuralNetworksExecution_free(None)
    lib.ANeuralNetworksBurst_free(burst)
    lib.ANeuralNetworksBurst_free(None)


def test_output_queries(lib, add):
    execution = new_execution(lib, add)
    rank, dims = ctypes.c_uint32(), (ctypes.c_uint32 * 1)()
    expect(lib.ANeuralNetworksExecution_getOutputOperandRank(execution, 0, byref(rank)),
           BAD_STATE)
    expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims),
           BAD_STATE)
    a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
    bind(lib, execution, [a, b], [out])
    expect(lib.ANeuralNetworksExecution_compute(execution))
    expect(lib.ANeuralNetworksExecution_getOutputOperandRank(execution, 0, byref(rank)))
    expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims))
    assert (rank.value, list(dims)) == (1, [4])
    for index in (1, -1):
        expect(lib.ANeuralNetworksExecution_getOutputOperandRank(execution, index, byref(rank)),
               BAD_DATA)
        expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, index, dims),
               BAD_DATA)
    expect(lib.ANeuralNetworksExecution_getOutputOperandRank(execution, 0, None), NULL_)
    expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, None), NULL_)
    expect(lib.ANeuralNetworksExecution_getOutputOperandRank(None, 0, byref(rank)), NULL_)


def test_dynamic_input_and_output_shapes(lib):
    """Inputs of unknown size need their dimensions at setInput; an output of unknown size is
    reported after computing, with OUTPUT_INSUFFICIENT_SIZE when its buffer is too small."""
    compilation = compile_model(lib, binary_model(lib, dims=(0,), output_dims=(0,)))
    a, b = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    six = operand_type(OperandType.TENSOR_FLOAT32, (6,))

    execution = new_execution(lib, compilation)
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, None, a.ctypes.data, a.nbytes),
           BAD_DATA)  # the model does not say how many
    open_type = operand_type(OperandType.TENSOR_FLOAT32, (0,))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, byref(open_type), a.ctypes.data,
                                                 a.nbytes), BAD_DATA)
    small = np.full(4, -1.0, np.float32)
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, byref(six), a.ctypes.data, 24))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 1, byref(six), b.ctypes.data, 24))
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, small.ctypes.data, 16))
    expect(lib.ANeuralNetworksExecution_compute(execution), INSUFFICIENT)
    np.testing.assert_array_equal(small, -1.0)  # nothing written
    rank, dims = ctypes.c_uint32(), (ctypes.c_uint32 * 1)()
    expect(lib.ANeuralNetworksExecution_getOutputOperandRank(execution, 0, byref(rank)),
           INSUFFICIENT)
    expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims),
           INSUFFICIENT)
    assert (rank.value, list(dims)) == (1, [6])

    execution = new_execution(lib, compilation)
    big = np.full(10, -1.0, np.float32)
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, byref(six), a.ctypes.data, 24))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 1, byref(six), b.ctypes.data, 24))
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, big.ctypes.data, 40))
    expect(lib.ANeuralNetworksExecution_compute(execution))
    expect(lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, 0, dims))
    assert list(dims) == [6]
    np.testing.assert_array_equal(big[:6], a + b)
    np.testing.assert_array_equal(big[6:], -1.0)


def test_output_type_declaring_other_dimensions_fails_the_execution(lib):
    compilation = compile_model(lib, binary_model(lib, dims=(4,), output_dims=(0,)))
    execution = new_execution(lib, compilation)
    a, b, out = A.copy(), B.copy(), np.zeros(8, np.float32)
    eight = operand_type(OperandType.TENSOR_FLOAT32, (8,))
    bind(lib, execution, [a, b], [])
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, byref(eight), out.ctypes.data,
                                                  32))
    expect(lib.ANeuralNetworksExecution_compute(execution), ResultCode.OP_FAILED)


def test_start_compute_and_events(lib, add):
    a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
    execution = new_execution(lib, add)
    bind(lib, execution, [a, b], [out])
    expect(lib.ANeuralNetworksExecution_startCompute(execution, None), NULL_)
    expect(lib.ANeuralNetworksExecution_startCompute(None, byref(c_void_p())), NULL_)
    event = c_void_p()
    expect(lib.ANeuralNetworksExecution_startCompute(execution, byref(event)))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, None, a.ctypes.data, 16),
           BAD_STATE)
    expect(lib.ANeuralNetworksEvent_wait(event))
    expect(lib.ANeuralNetworksEvent_wait(event))  # waiting again is fine
    np.testing.assert_array_equal(out, A + B)
    expect(lib.ANeuralNetworksExecution_compute(execution), BAD_STATE)
    lib.ANeuralNetworksEvent_free(event)
    lib.ANeuralNetworksEvent_free(None)
    expect(lib.ANeuralNetworksEvent_wait(None), NULL_)
    expect(lib.ANeuralNetworksEvent_wait(event), BAD_DATA)  # freed


def test_event_reports_the_execution_failure(lib):
    compilation = compile_model(lib, binary_model(lib, output_dims=(0,)))
    execution = new_execution(lib, compilation)
    a, b, small = A.copy(), B.copy(), np.zeros(2, np.float32)
    bind(lib, execution, [a, b], [small])
    event = c_void_p()
    expect(lib.ANeuralNetworksExecution_startCompute(execution, byref(event)))
    expect(lib.ANeuralNetworksEvent_wait(event), INSUFFICIENT)
    lib.ANeuralNetworksEvent_free(event)


def test_bursts(lib, add):
    burst, other_burst = c_void_p(), c_void_p()
    expect(lib.ANeuralNetworksBurst_create(add, None), NULL_)
    expect(lib.ANeuralNetworksBurst_create(None, byref(burst)), NULL_)
    expect(lib.ANeuralNetworksBurst_create(add, byref(burst)))
    other = compile_model(lib, binary_model(lib))
    expect(lib.ANeuralNetworksBurst_create(other, byref(other_burst)))
    for _ in range(3):
        execution = new_execution(lib, add)
        a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
        bind(lib, execution, [a, b], [out])
        expect(lib.ANeuralNetworksExecution_burstCompute(execution, other_burst), BAD_DATA)
        expect(lib.ANeuralNetworksExecution_burstCompute(execution, None), NULL_)
        expect(lib.ANeuralNetworksExecution_burstCompute(None, burst), NULL_)
        expect(lib.ANeuralNetworksExecution_burstCompute(execution, burst))
        np.testing.assert_array_equal(out, A + B)
        lib.ANeuralNetworksExecution_free(execution)
    lib.ANeuralNetworksBurst_free(burst)
    lib.ANeuralNetworksBurst_free(other_burst)


def test_timing_needs_a_compilation_for_one_device(lib, add):
    execution = new_execution(lib, add)
    expect(lib.ANeuralNetworksExecution_setMeasureTiming(execution, True), BAD_DATA)
    expect(lib.ANeuralNetworksExecution_setMeasureTiming(None, True), NULL_)


@pytest.mark.parametrize("measure", [True, False])
def test_durations(lib, measure):
    compilation = compile_model(lib, binary_model(lib), host_device(lib))
    execution = new_execution(lib, compilation)
    expect(lib.ANeuralNetworksExecution_setMeasureTiming(execution, measure))
    a, b, out = A.copy(), B.copy(), np.zeros(4, np.float32)
    bind(lib, execution, [a, b], [out])
    duration = ctypes.c_uint64(7)
    get = lib.ANeuralNetworksExecution_getDuration
    expect(get(execution, DurationCode.ON_HARDWARE, byref(duration)), BAD_STATE)
    expect(lib.ANeuralNetworksExecution_compute(execution))
    expect(lib.ANeuralNetworksExecution_setMeasureTiming(execution, measure), BAD_STATE)
    values = {}
    for code in DurationCode:
        expect(get(execution, code, byref(duration)))
        values[code] = duration.value
    if measure:
        assert 0 < values[DurationCode.ON_HARDWARE] <= values[DurationCode.IN_DRIVER] < 10**10
    else:
        assert set(values.values()) == {UINT64_MAX}
    # Without dependencies the fenced durations are the plain ones (API 30).
    assert values[DurationCode.FENCED_ON_HARDWARE] == values[DurationCode.ON_HARDWARE]
    assert values[DurationCode.FENCED_IN_DRIVER] == values[DurationCode.IN_DRIVER]
    expect(get(execution, -1, byref(duration)), BAD_DATA)
    expect(get(execution, 4, byref(duration)), BAD_DATA)
    expect(get(execution, 0, None), NULL_)
    expect(get(None, 0, byref(duration)), NULL_)


@pytest.fixture
def shared_file(tmp_path):
    """A file of two pages, open read-write."""
    path = tmp_path / "memory.bin"
    path.write_bytes(bytes(2 * mmap.PAGESIZE))
    fd = os.open(path, os.O_RDWR)
    yield fd, path
    os.close(fd)


def test_memory_checks(lib, shared_file):
    fd, path = shared_file
    memory = c_void_p()
    rw = mmap.PROT_READ | mmap.PROT_WRITE
    create = lib.ANeuralNetworksMemory_createFromFd
    expect(create(0, rw, fd, 0, byref(memory)), BAD_DATA)
    expect(create(64, rw, -1, 0, byref(memory)), BAD_DATA)
    expect(create(64, rw, fd, 100, byref(memory)), BAD_DATA)  # not page-aligned
    expect(create(3 * mmap.PAGESIZE, rw, fd, 0, byref(memory)), BAD_DATA)  # beyond the file
    expect(create(64, 0x80, fd, 0, byref(memory)), BAD_DATA)  # not a protection
    expect(create(64, rw, fd, 0, None), NULL_)
    assert memory.value is None
    read_end, write_end = os.pipe()
    expect(create(64, rw, read_end, 0, byref(memory)), ResultCode.UNMAPPABLE)
    os.close(read_end)
    os.close(write_end)
    expect(create(64, rw, read_end, 0, byref(memory)), BAD_DATA)  # closed
    read_only = os.open(path, os.O_RDONLY)
    expect(create(64, rw, read_only, 0, byref(memory)), ResultCode.UNMAPPABLE)
    expect(create(64, mmap.PROT_READ, read_only, 0, byref(memory)))
    os.close(read_only)
    lib.ANeuralNetworksMemory_free(memory)
    expect(create(64, rw, fd, mmap.PAGESIZE, byref(memory)))
    lib.ANeuralNetworksMemory_free(memory)
    lib.ANeuralNetworksMemory_free(None)
    hardware_buffer = ctypes.c_int(0)
    expect(lib.ANeuralNetworksMemory_createFromAHardwareBuffer(byref(hardware_buffer),
                                                                byref(memory)),
           ResultCode.UNMAPPABLE)
    assert memory.value is None
    expect(lib.ANeuralNetworksMemory_createFromAHardwareBuffer(None, byref(memory)), NULL_)


def test_inputs_outputs_and_constants_in_memory(lib, shared_file):
    """The file holds b at offset 0 and receives the output at offset 64; a second model takes
    b as a constant from the memory (referenced, not copied)."""
    fd, path = shared_file
    os.pwrite(fd, B.tobytes(), 0)
    memory, read_only, no_access = c_void_p(), c_void_p(), c_void_p()
    expect(lib.ANeuralNetworksMemory_createFromFd(128, mmap.PROT_READ | mmap.PROT_WRITE, fd, 0,
                                                  byref(memory)))
    expect(lib.ANeuralNetworksMemory_createFromFd(128, mmap.PROT_READ, fd, 0,
                                                  byref(read_only)))
    expect(lib.ANeuralNetworksMemory_createFromFd(128, 0, fd, 0,  # PROT_NONE
                                                  byref(no_access)))
    compilation = compile_model(lib, binary_model(lib))
    execution = new_execution(lib, compilation)
    a = A.copy()
    set_in = lib.ANeuralNetworksExecution_setInputFromMemory
    set_out = lib.ANeuralNetworksExecution_setOutputFromMemory
    expect(set_in(execution, 1, None, None, 0, 16), NULL_)
    expect(set_in(execution, 1, None, memory, 120, 16), BAD_DATA)  # past the end
    expect(set_in(execution, 1, None, memory, 0, 8), BAD_DATA)  # too short
    expect(set_in(execution, 1, None, no_access, 0, 16), BAD_DATA)
    expect(set_out(execution, 0, None, read_only, 64, 16), BAD_DATA)
    expect(set_out(execution, 0, None, memory, 9, 128), BAD_DATA)
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, None, a.ctypes.data, 16))
    expect(set_in(execution, 1, None, memory, 0, 16))
    expect(set_out(execution, 0, None, memory, 64, 16))
    expect(lib.ANeuralNetworksExecution_compute(execution))
    np.testing.assert_array_equal(np.frombuffer(path.read_bytes()[64:80], np.float32), A + B)

    # out = a * b with b a constant referenced in the memory.
    model2 = c_void_p()
    expect(lib.ANeuralNetworksModel_create(byref(model2)))
    f4 = operand_type(OperandType.TENSOR_FLOAT32, (4,))
    for t in (f4, f4, operand_type(OperandType.INT32), f4):
        expect(lib.ANeuralNetworksModel_addOperand(model2, byref(t)))
    from_memory = lib.ANeuralNetworksModel_setOperandValueFromMemory
    expect(from_memory(model2, 1, None, 0, 16), NULL_)
    expect(from_memory(model2, 1, memory, 0, 12), BAD_DATA)
    expect(from_memory(model2, 1, memory, 120, 16), BAD_DATA)
    expect(from_memory(model2, 9, memory, 0, 16), BAD_DATA)
    expect(from_memory(model2, 1, memory, 0, 16))
    fuse = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model2, 2, byref(fuse), 4))
    ins, outs = (ctypes.c_uint32 * 3)(0, 1, 2), (ctypes.c_uint32 * 1)(3)
    expect(lib.ANeuralNetworksModel_addOperation(model2, OperationType.MUL, 3, ins, 1, outs))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model2, 1, ins, 1, outs))
    expect(lib.ANeuralNetworksModel_finish(model2))
    lib.ANeuralNetworksMemory_free(memory)  # the model keeps what it references
    out = np.zeros(4, np.float32)
    execution = new_execution(lib, compile_model(lib, model2))
    bind(lib, execution, [a], [out])
    expect(lib.ANeuralNetworksExecution_compute(execution))
    np.testing.assert_array_equal(out, A * B)


def test_a_type_checked_once_is_checked_again_at_every_call(lib, add):
    """setInput's type checks are remembered per type for the executions that repeat them:
    a bad type stays BAD_DATA at each call, a good one OK; an execution handle of the wrong
    kind is still refused."""
    contradicting = operand_type(OperandType.TENSOR_FLOAT32, (2, 2))
    same = operand_type(OperandType.TENSOR_FLOAT32, (4,))
    a = A.copy()
    for _ in range(3):
        execution = new_execution(lib, add)
        expect(lib.ANeuralNetworksExecution_setInput(execution, 0, byref(contradicting),
                                                     a.ctypes.data, 16), BAD_DATA)
        expect(lib.ANeuralNetworksExecution_setInput(execution, 0, byref(same),
                                                     a.ctypes.data, 16))
        lib.ANeuralNetworksExecution_free(execution)
    expect(lib.ANeuralNetworksExecution_setInput(add, 0, byref(same), a.ctypes.data, 16),
           BAD_DATA)
