"""Small NNAPI models built through the C API with ctypes, shared by the C API tests."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_void_p

import numpy as np

from torch_nnapi.capi._abi import OperandTypeStruct
from torch_nnapi.nnapi import FuseCode, OperandType, OperationType, ResultCode

OK = ResultCode.NO_ERROR


def operand_type(code: OperandType, dims=(), scale: float = 0.0,
                 zero_point: int = 0) -> OperandTypeStruct:
    array = (ctypes.c_uint32 * len(dims))(*dims) if len(dims) else None
    struct = OperandTypeStruct(int(code), len(dims), array, scale, zero_point)
    struct._keep = array
    return struct


def u32(*values: int):
    return (ctypes.c_uint32 * len(values))(*values)


def expect(code: int, expected: ResultCode = OK) -> None:
    assert ResultCode(code) == expected, f"got {ResultCode(code).name}, expected {expected.name}"


def new_model(lib) -> c_void_p:
    model = c_void_p()
    expect(lib.ANeuralNetworksModel_create(byref(model)))
    return model


def binary_model(lib, operation: OperationType = OperationType.ADD, dims=(4,),
                 output_dims=None, fuse: FuseCode = FuseCode.NONE,
                 finish: bool = True) -> c_void_p:
    """out = a (op) b on float32 tensors: operands a=0, b=1, fuse=2, out=3."""
    model = new_model(lib)
    tensor = operand_type(OperandType.TENSOR_FLOAT32, dims)
    out = operand_type(OperandType.TENSOR_FLOAT32, dims if output_dims is None else output_dims)
    for t in (tensor, tensor, operand_type(OperandType.INT32), out):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    activation = ctypes.c_int32(int(fuse))
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(activation), 4))
    expect(lib.ANeuralNetworksModel_addOperation(model, int(operation), 3, u32(0, 1, 2), 1,
                                                 u32(3)))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32(0, 1), 1, u32(3)))
    if finish:
        expect(lib.ANeuralNetworksModel_finish(model))
    return model


def add_then_multiply_model(lib, dims=(4,), multiply_added_first: bool = False) -> c_void_p:
    """out = (a + b) * b on float32 tensors: operands a=0, b=1, fuse=2, a + b=3, out=4. With
    ``multiply_added_first`` the MUL is added to the model before the ADD it reads from."""
    model = new_model(lib)
    tensor = operand_type(OperandType.TENSOR_FLOAT32, dims)
    for t in (tensor, tensor, operand_type(OperandType.INT32), tensor, tensor):
        expect(lib.ANeuralNetworksModel_addOperand(model, byref(t)))
    fuse = ctypes.c_int32(0)
    expect(lib.ANeuralNetworksModel_setOperandValue(model, 2, byref(fuse), 4))
    add = (OperationType.ADD, u32(0, 1, 2), u32(3))
    multiply = (OperationType.MUL, u32(3, 1, 2), u32(4))
    for operation, inputs, outputs in ((multiply, add) if multiply_added_first
                                       else (add, multiply)):
        expect(lib.ANeuralNetworksModel_addOperation(model, operation, 3, inputs, 1, outputs))
    expect(lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32(0, 1), 1, u32(4)))
    expect(lib.ANeuralNetworksModel_finish(model))
    return model


def compile_model(lib, model: c_void_p, device: c_void_p | None = None) -> c_void_p:
    """A finished compilation; for ``device`` alone when given (createForDevices)."""
    compilation = c_void_p()
    if device is None:
        expect(lib.ANeuralNetworksCompilation_create(model, byref(compilation)))
    else:
        devices = (c_void_p * 1)(device)
        expect(lib.ANeuralNetworksCompilation_createForDevices(model, devices, 1,
                                                               byref(compilation)))
    expect(lib.ANeuralNetworksCompilation_finish(compilation))
    return compilation


def new_execution(lib, compilation: c_void_p) -> c_void_p:
    execution = c_void_p()
    expect(lib.ANeuralNetworksExecution_create(compilation, byref(execution)))
    return execution


def bind(lib, execution: c_void_p, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
    for i, array in enumerate(inputs):
        expect(lib.ANeuralNetworksExecution_setInput(execution, i, None, array.ctypes.data,
                                                     array.nbytes))
    for i, array in enumerate(outputs):
        expect(lib.ANeuralNetworksExecution_setOutput(execution, i, None, array.ctypes.data,
                                                      array.nbytes))


def host_device(lib) -> c_void_p:
    device = c_void_p()
    expect(lib.ANeuralNetworks_getDevice(0, byref(device)))
    return device


def run_binary(lib, compilation: c_void_p, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    execution = new_execution(lib, compilation)
    try:
        bind(lib, execution, [a, b], [out])
        expect(lib.ANeuralNetworksExecution_compute(execution))
    finally:
        lib.ANeuralNetworksExecution_free(execution)
    return out
