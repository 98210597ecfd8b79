"""ANeuralNetworksModel_* and devices through the C library: documented codes for misuse,
NNAPI's copy-or-reference rules for operand values, supported operations per device."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_void_p

import numpy as np
import pytest

from torch_nnapi.capi._abi import SymmPerChannelQuantParamsStruct
from torch_nnapi.nnapi import DeviceType, OperandType, OperationType, ResultCode
from torch_nnapi.runtime import KERNELS

from .clib import (
    add_then_multiply_model,
    binary_model,
    compile_model,
    expect,
    host_device,
    new_model,
    operand_type,
    run_binary,
    u32,
)

NULL_ = ResultCode.UNEXPECTED_NULL
BAD_DATA = ResultCode.BAD_DATA
BAD_STATE = ResultCode.BAD_STATE
FLOAT4 = operand_type(OperandType.TENSOR_FLOAT32, (4,))


def test_create_and_free(lib):
    expect(lib.ANeuralNetworksModel_create(None), NULL_)
    model = new_model(lib)
    assert model.value
    lib.ANeuralNetworksModel_free(model)
    lib.ANeuralNetworksModel_free(None)
    lib.ANeuralNetworksModel_free(model)  # twice: ignored
    lib.ANeuralNetworksModel_free(c_void_p(0x1234))  # never a model: ignored


def test_freed_foreign_and_wrong_kind_handles_are_bad_data(lib):
    model = binary_model(lib)
    compilation = compile_model(lib, model)
    expect(lib.ANeuralNetworksModel_finish(compilation), BAD_DATA)  # a compilation, not a model
    expect(lib.ANeuralNetworksModel_finish(c_void_p(0xDEADBEEF)), BAD_DATA)
    scratch = new_model(lib)
    lib.ANeuralNetworksModel_free(scratch)
    expect(lib.ANeuralNetworksModel_addOperand(scratch, byref(FLOAT4)), BAD_DATA)


@pytest.mark.parametrize("fields, why", [
    ((OperandType.TENSOR_QUANT8_ASYMM, (2,), 0.0, 0), "quant8 needs a positive scale"),
    ((OperandType.TENSOR_QUANT8_ASYMM, (2,), 1.0, 256), "zero point above 255"),
    ((OperandType.TENSOR_QUANT8_SYMM, (2,), 1.0, 1), "symmetric zero point not 0"),
    ((OperandType.TENSOR_FLOAT32, (2,), 1.0, 0), "float tensor with a scale"),
    ((OperandType.INT32, (1,), 0.0, 0), "scalar with dimensions"),
    ((99, (2,), 0.0, 0), "unknown type code"),
])
def test_add_operand_rejects_invalid_types(lib, fields, why):
    model = new_model(lib)
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(operand_type(*fields))), BAD_DATA)


def test_add_operand_checks_the_dimension_pointer(lib):
    model = new_model(lib)
    expect(lib.ANeuralNetworksModel_addOperand(None, byref(FLOAT4)), NULL_)
    expect(lib.ANeuralNetworksModel_addOperand(model, None), NULL_)
    no_dims = operand_type(OperandType.TENSOR_FLOAT32)
    no_dims.dimensionCount = 2  # a count without an array
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(no_dims)), BAD_DATA)
    stray = operand_type(OperandType.TENSOR_FLOAT32, (3,))
    stray.dimensionCount = 0  # an array without a count
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(stray)), BAD_DATA)
    unknown_rank = operand_type(OperandType.TENSOR_FLOAT32)
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(unknown_rank)))


def test_dimension_counts_above_the_limit_are_refused_before_reading(lib):
    """A corrupted converted model made torch's loader pass dimensionCount 2^31 with a
    16-byte array: refused with BAD_DATA before the array is read (it used to crash)."""
    from torch_nnapi.capi.bridge import last_error
    from torch_nnapi.nnapi.codes import MAX_RANK

    model = new_model(lib)
    for count in (2**31, 2**32 - 1, MAX_RANK + 1):
        corrupted = operand_type(OperandType.TENSOR_FLOAT32, (1, 2, 3, 4))
        corrupted.dimensionCount = count
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(corrupted)), BAD_DATA)
        assert f"ANeuralNetworksModel_addOperand: BAD_DATA: type->dimensionCount {count}" \
            in last_error()
    expect(lib.ANeuralNetworksModel_addOperand(
        model, byref(operand_type(OperandType.TENSOR_FLOAT32, (1,) * MAX_RANK))))


def test_the_c_library_and_the_model_share_the_rank_limit():
    from pathlib import Path

    import torch_nnapi.capi
    from torch_nnapi.nnapi.codes import MAX_RANK

    source = (Path(torch_nnapi.capi.__file__).parent / "neuralnetworks.c").read_text()
    assert f"#define TNN_MAX_RANK {MAX_RANK}\n" in source


def test_lengths_beyond_the_address_space_are_bad_data(lib):
    model = binary_model(lib, finish=False)
    data = (ctypes.c_float * 4)()
    for length in (2**63, 2**64 - 1):
        expect(lib.ANeuralNetworksModel_setOperandValue(model, 1, data, length), BAD_DATA)


def test_values_no_kernel_can_use_are_refused_at_compilation(lib):
    """Fuzzing regressions: an infinite resize scale and an output of some 10^19 bytes
    reached NumPy (OP_FAILED); now BAD_DATA and OUT_OF_MEMORY when compiling."""
    scale_model = new_model(lib)
    for t in (operand_type(OperandType.TENSOR_FLOAT32, (1, 2, 2, 1)),
              operand_type(OperandType.FLOAT32), operand_type(OperandType.FLOAT32),
              operand_type(OperandType.TENSOR_FLOAT32, (0, 0, 0, 0))):
        expect(lib.ANeuralNetworksModel_addOperand(scale_model, byref(t)))
    for index, value in ((1, float("inf")), (2, 1.0)):
        scalar = ctypes.c_float(value)
        expect(lib.ANeuralNetworksModel_setOperandValue(scale_model, index, byref(scalar), 4))
    expect(lib.ANeuralNetworksModel_addOperation(scale_model,
                                                 int(OperationType.RESIZE_BILINEAR), 3,
                                                 u32(0, 1, 2), 1, u32(3)))
    tile_model = new_model(lib)
    for t in (operand_type(OperandType.TENSOR_FLOAT32, (1, 1)),
              operand_type(OperandType.TENSOR_INT32, (2,)),
              operand_type(OperandType.TENSOR_FLOAT32, (0, 0))):
        expect(lib.ANeuralNetworksModel_addOperand(tile_model, byref(t)))
    multiples = (ctypes.c_int32 * 2)(2**31 - 1, 2**31 - 1)
    expect(lib.ANeuralNetworksModel_setOperandValue(tile_model, 1, multiples, 8))
    expect(lib.ANeuralNetworksModel_addOperation(tile_model, int(OperationType.TILE), 2,
                                                 u32(0, 1), 1, u32(2)))
    for model, output, code in ((scale_model, 3, BAD_DATA),
                                (tile_model, 2, ResultCode.OUT_OF_MEMORY)):
        expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32(0), 1,
                                                                 u32(output)))
        expect(lib.ANeuralNetworksModel_finish(model))
        compilation = c_void_p()
        expect(lib.ANeuralNetworksCompilation_create(model, byref(compilation)))
        expect(lib.ANeuralNetworksCompilation_finish(compilation), code)


def test_nothing_changes_after_finish(lib):
    model = binary_model(lib)
    value = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(FLOAT4)), BAD_STATE)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(value), 4), BAD_STATE)
    expect(lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32(0, 1, 2), 1, u32(3)),
           BAD_STATE)
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32(0, 1), 1, u32(3)),
           BAD_STATE)
    expect(lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, True), BAD_STATE)
    expect(lib.ANeuralNetworksModel_finish(model), BAD_STATE)
    expect(lib.ANeuralNetworksModel_finish(None), NULL_)


def test_set_operand_value_checks(lib):
    model = binary_model(lib, finish=False)
    data = (ctypes.c_float * 4)()
    expect(lib.ANeuralNetworksModel_setOperandValue(None, 0, data, 16), NULL_)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 3, None, 16), NULL_)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 3, data, 12), BAD_DATA)  # wrong size
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 4, data, 16), BAD_DATA)  # no operand
    expect(lib.ANeuralNetworksModel_setOperandValue(model, -1, data, 16), BAD_DATA)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 0, data, 16), BAD_DATA)  # an input
    open_dims = operand_type(OperandType.TENSOR_FLOAT32, (0, 4))
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(open_dims)))
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 4, data, 16), BAD_DATA)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 4, None, 0))  # omitted: fine


def _add_constant_model(lib, count: int, constant: np.ndarray) -> c_void_p:
    """out = input + constant (``count`` float32 each); the constant is set from ``constant``'s
    buffer by setOperandValue and the model is not finished."""
    model = new_model(lib)
    tensor = operand_type(OperandType.TENSOR_FLOAT32, (count,))
    for t in (tensor, tensor, operand_type(OperandType.INT32), tensor):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 1, constant.ctypes.data,
                                                    constant.nbytes))
    fuse = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(fuse), 4))
    expect(lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32(0, 1, 2), 1, u32(3)))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32(0), 1, u32(3)))
    return model


def _run_unary(lib, model: c_void_p, x: np.ndarray) -> np.ndarray:
    compilation = compile_model(lib, model)
    out = np.zeros_like(x)
    execution = c_void_p()
    expect(lib.ANeuralNetworksExecution_create(compilation, byref(execution)))
    expect(lib.ANeuralNetworksExecution_setInput(execution, 0, None, x.ctypes.data, x.nbytes))
    expect(lib.ANeuralNetworksExecution_setOutput(execution, 0, None, out.ctypes.data,
                                                  out.nbytes))
    expect(lib.ANeuralNetworksExecution_compute(execution))
    return out


def test_small_values_are_copied_at_once(lib):
    constant = np.full(32, 1.0, np.float32)  # 128 bytes: copied
    model = _add_constant_model(lib, 32, constant)
    constant[:] = 100.0
    expect(lib.ANeuralNetworksModel_finish(model))
    np.testing.assert_array_equal(_run_unary(lib, model, np.zeros(32, np.float32)), 1.0)


def test_large_values_are_referenced_until_finish(lib):
    constant = np.full(33, 1.0, np.float32)  # 132 bytes: referenced, copied by finish
    model = _add_constant_model(lib, 33, constant)
    constant[:] = 2.0
    expect(lib.ANeuralNetworksModel_finish(model))
    constant[:] = 100.0
    np.testing.assert_array_equal(_run_unary(lib, model, np.zeros(33, np.float32)), 2.0)


def test_per_channel_quant_params(lib):
    model = new_model(lib)
    filter_type = operand_type(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 1, 1, 2))
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(filter_type)))
    expect(lib.ANeuralNetworksModel_addOperand(model, byref(FLOAT4)))
    scales = (ctypes.c_float * 3)(0.5, 0.25, 1.0)

    def params(channel_dim=0, count=3, array=scales):
        return byref(SymmPerChannelQuantParamsStruct(channel_dim, count, array))

    call = lib.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams
    expect(call(None, 0, params()), NULL_)
    expect(call(model, 0, None), NULL_)
    expect(call(model, 2, params()), BAD_DATA)  # no such operand
    expect(call(model, 1, params(count=4)), BAD_DATA)  # not per-channel
    expect(call(model, 0, params(count=2)), BAD_DATA)  # one scale per channel
    expect(call(model, 0, params(channel_dim=4)), BAD_DATA)
    expect(call(model, 0, params(array=None)), BAD_DATA)
    expect(call(model, 0, params(array=(ctypes.c_float * 3)(0.5, -1.0, 1.0))), BAD_DATA)
    expect(call(model, 0, params()))


def test_add_operation_checks(lib):
    model = binary_model(lib, finish=False)
    add = OperationType.ADD
    expect(lib.ANeuralNetworksModel_addOperation(None, add, 3, u32(0, 1, 2), 1, u32(3)), NULL_)
    expect(lib.ANeuralNetworksModel_addOperation(model, add, 3, None, 1, u32(3)), NULL_)
    expect(lib.ANeuralNetworksModel_addOperation(model, add, 3, u32(0, 1, 2), 1, None), NULL_)
    expect(lib.ANeuralNetworksModel_addOperation(model, 12345, 3, u32(0, 1, 2), 1, u32(3)),
           BAD_DATA)
    expect(lib.ANeuralNetworksModel_addOperation(model, add, 2, u32(0, 1), 1, u32(3)), BAD_DATA)
    expect(lib.ANeuralNetworksModel_addOperation(model, add, 3, u32(0, 1, 9), 1, u32(3)),
           BAD_DATA)
    expect(lib.ANeuralNetworksModel_addOperation(model, add, 3, u32(0, 2, 1), 1, u32(3)),
           BAD_DATA)  # an INT32 scalar where a tensor goes


def test_identify_inputs_and_outputs_checks(lib):
    model = binary_model(lib, finish=False)
    call = lib.ANeuralNetworksModel_identifyInputsAndOutputs
    expect(call(None, 1, u32(0), 1, u32(3)), NULL_)
    expect(call(model, 1, None, 1, u32(3)), NULL_)
    expect(call(model, 1, u32(0), 1, None), NULL_)
    expect(call(model, 1, u32(7), 1, u32(3)), BAD_DATA)  # out of range
    expect(call(model, 1, u32(2), 1, u32(3)), BAD_DATA)  # a constant
    expect(call(model, 2, u32(0, 0), 1, u32(3)), BAD_DATA)  # twice
    expect(call(model, 1, u32(3), 1, u32(3)), BAD_DATA)  # both input and output


def test_finish_validates_the_whole_model(lib):
    empty = new_model(lib)
    expect(lib.ANeuralNetworksModel_finish(empty), BAD_DATA)
    model = new_model(lib)
    for t in (FLOAT4, FLOAT4, operand_type(OperandType.INT32), FLOAT4):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    expect(lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32(0, 1, 2), 1, u32(3)))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32(0, 1), 1, u32(3)))
    # The fuse code (operand 2) has no value and no writer.
    expect(lib.ANeuralNetworksModel_finish(model), BAD_DATA)
    # A model whose finish failed is invalid for good.
    expect(lib.ANeuralNetworksModel_finish(model), BAD_STATE)
    fuse = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(fuse), 4), BAD_STATE)
    compilation = c_void_p()
    expect(lib.ANeuralNetworksCompilation_create(model, byref(compilation)), BAD_STATE)
    assert compilation.value is None


def test_devices(lib):
    count = ctypes.c_uint32()
    expect(lib.ANeuralNetworks_getDeviceCount(byref(count)))
    assert count.value == 1
    expect(lib.ANeuralNetworks_getDeviceCount(None), NULL_)
    device, again = host_device(lib), host_device(lib)
    assert device.value == again.value
    expect(lib.ANeuralNetworks_getDevice(1, byref(c_void_p())), BAD_DATA)
    expect(lib.ANeuralNetworks_getDevice(0, None), NULL_)
    name, version = ctypes.c_char_p(), ctypes.c_char_p()
    kind, level = ctypes.c_int32(), ctypes.c_int64()
    expect(lib.ANeuralNetworksDevice_getName(device, byref(name)))
    expect(lib.ANeuralNetworksDevice_getVersion(device, byref(version)))
    expect(lib.ANeuralNetworksDevice_getType(device, byref(kind)))
    expect(lib.ANeuralNetworksDevice_getFeatureLevel(device, byref(level)))
    assert name.value == b"nnapi-reference"
    assert version.value
    assert kind.value == DeviceType.CPU
    assert level.value == 30
    for getter in (lib.ANeuralNetworksDevice_getName, lib.ANeuralNetworksDevice_getType,
                   lib.ANeuralNetworksDevice_getVersion,
                   lib.ANeuralNetworksDevice_getFeatureLevel):
        expect(getter(device, None), NULL_)
        expect(getter(None, None), NULL_)
        expect(getter(c_void_p(0x40), byref(level)), BAD_DATA)


def test_supported_operations_answer_per_operation_in_added_order(lib, monkeypatch):
    model = add_then_multiply_model(lib, multiply_added_first=True)
    device = host_device(lib)
    devices = (c_void_p * 2)(device, device)
    supported = (ctypes.c_bool * 2)()
    call = lib.ANeuralNetworksModel_getSupportedOperationsForDevices
    expect(call(model, devices, 1, supported))
    assert list(supported) == [True, True]
    monkeypatch.delitem(KERNELS, OperationType.MUL)  # as if the runtime had no MUL kernel
    expect(call(model, devices, 1, supported))
    assert list(supported) == [False, True]  # MUL was added first
    compilation = c_void_p()
    expect(lib.ANeuralNetworksCompilation_createForDevices(model, devices, 1,
                                                           byref(compilation)))
    expect(lib.ANeuralNetworksCompilation_finish(compilation), BAD_DATA)
    expect(call(model, devices, 0, supported), BAD_DATA)
    expect(call(model, devices, 2, supported), BAD_DATA)  # the same device twice
    expect(call(model, (c_void_p * 1)(None), 1, supported), NULL_)
    expect(call(model, (c_void_p * 1)(0x1230), 1, supported), BAD_DATA)
    expect(call(None, devices, 1, supported), NULL_)
    expect(call(model, None, 1, supported), NULL_)
    expect(call(model, devices, 1, None), NULL_)
    unfinished = binary_model(lib, finish=False)
    expect(call(unfinished, devices, 1, supported), BAD_STATE)


def test_relaxed_model_runs(lib):
    model = binary_model(lib, finish=False)
    expect(lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(None, True), NULL_)
    expect(lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, True))
    expect(lib.ANeuralNetworksModel_finish(model))
    a = np.array([1, 2, 3, 4], np.float32)
    np.testing.assert_allclose(run_binary(lib, compile_model(lib, model), a, a), 2 * a,
                               rtol=1e-3)


def test_quantized_results_agree_with_the_python_model(lib):
    """The Python Model keeps scales as the float32 the C API receives: a SUB of inputs at
    scale 0.01 into scale 0.1 (zero points 120) gave some 4,500 of the 65,536 input pairs a
    different quantum when the Python side computed with the float64 0.01."""
    from torch_nnapi.nnapi import Model
    from torch_nnapi.runtime import Compilation

    count = 256 * 256
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    scales = (0.01, 0.01, 0.1)
    python_model = Model()
    x, y = (python_model.add_operand(OperandType.TENSOR_QUANT8_ASYMM, (count,), s, 120)
            for s in scales[:2])
    fuse = python_model.add_scalar(OperandType.INT32, 0)
    out = python_model.add_operand(OperandType.TENSOR_QUANT8_ASYMM, (count,), scales[2], 120)
    python_model.add_operation(OperationType.SUB, [x, y, fuse], [out])
    python_model.identify_inputs_and_outputs([x, y], [out])
    expected = Compilation(python_model.finish()).run([a, b]).outputs[0]

    model = new_model(lib)
    types = [operand_type(OperandType.TENSOR_QUANT8_ASYMM, (count,), s, 120) for s in scales]
    for t in (types[0], types[1], operand_type(OperandType.INT32), types[2]):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    none = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(none), 4))
    expect(lib.ANeuralNetworksModel_addOperation(model, int(OperationType.SUB), 3, u32(0, 1, 2),
                                                 1, u32(3)))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32(0, 1), 1, u32(3)))
    expect(lib.ANeuralNetworksModel_finish(model))
    try:
        np.testing.assert_array_equal(run_binary(lib, compile_model(lib, model), a, b),
                                      expected)
    finally:
        lib.ANeuralNetworksModel_free(model)
