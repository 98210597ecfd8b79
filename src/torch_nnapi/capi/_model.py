"""ANeuralNetworksModel: C calls forwarded to ``nnapi.Model``, with NNAPI's rules for values.

Operand values up to ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES bytes are copied at
setOperandValue; larger ones are referenced (the caller may still change them) and copied when
the model is finished, as Android does; values in a memory object stay referenced.
"""

from __future__ import annotations

import ctypes

from ..nnapi.codes import MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
from ..nnapi.errors import BadDataError, BadStateError, NnapiError
from ..nnapi.model import Model, Operand
from ..runtime.partitioning import supported_operations
from ._abi import (
    SymmPerChannelQuantParamsStruct,
    UnexpectedNullError,
    read_array,
    read_operand_type,
    read_struct,
    require,
    store_array,
    view,
)
from ._calls import HANDLES, Handled, entry, give
from ._device import read_device_list
from ._memory import memory_of


class ModelState(Handled):
    KIND = "ANeuralNetworksModel"

    def __init__(self) -> None:
        self.model = Model()
        self._referenced: dict[int, memoryview] = {}
        self.invalid = False

    def modifiable(self) -> Model:
        if self.model.finished:
            raise BadStateError("the model is finished and can no longer change")
        if self.invalid:
            raise BadStateError("the model is invalid: finishing it failed")
        return self.model

    def finished(self) -> Model:
        if not self.model.finished or self.invalid:
            raise BadStateError("the model is not finished (or finishing it failed)")
        return self.model

    def operand(self, index: int) -> Operand:
        operands = self.model.operands
        if not 0 <= index < len(operands):
            raise BadDataError(f"operand index {index} is out of range (the model has"
                               f" {len(operands)} operands)")
        return operands[index]

    def set_value(self, index: int, value: memoryview | None, *, until_finish: bool) -> None:
        """Sets a constant (None: omitted); ``until_finish`` references the caller's memory
        until finish, otherwise the value is copied now."""
        self.modifiable().set_operand_value(index, value, copy=not until_finish)
        self._referenced.pop(index, None)
        if until_finish and value is not None:
            self._referenced[index] = value

    def reference(self, index: int, region: memoryview) -> None:
        """Sets a constant that stays in a memory object."""
        self.modifiable().set_operand_value(index, region, copy=False)
        self._referenced.pop(index, None)

    def refer_to_model(self, index: int, referenced: Model) -> None:
        """Makes a MODEL operand refer to another (finished) model."""
        self.modifiable().set_operand_value_from_model(index, referenced)
        self._referenced.pop(index, None)

    def finish(self) -> None:
        model = self.modifiable()
        for index, value in self._referenced.items():
            model.set_operand_value(index, bytes(value), copy=False)
        self._referenced.clear()
        try:
            model.finish()
        except NnapiError:
            self.invalid = True
            raise


def model_of(handle: int, argument: str = "model") -> ModelState:
    return HANDLES.get(handle, ModelState, argument)


@entry
def model_create(out: int) -> None:
    give(out, "model", ModelState())


@entry
def model_free(handle: int) -> None:
    HANDLES.remove(handle, ModelState)


@entry
def model_finish(handle: int) -> None:
    model_of(handle).finish()


@entry
def model_add_operand(handle: int, type_address: int) -> None:
    require(model=handle, type=type_address)
    model = model_of(handle).modifiable()
    t = read_operand_type(type_address)
    model.add_operand(t.type, t.dimensions, t.scale, t.zero_point)


@entry
def model_set_operand_value(handle: int, index: int, buffer: int, length: int) -> None:
    require(model=handle)
    if not buffer and length:
        raise UnexpectedNullError(f"buffer is NULL but length is {length}")
    state = model_of(handle)
    state.modifiable()
    if not buffer:
        state.set_value(index, None, until_finish=False)
        return
    large = length > MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
    state.set_value(index, view(buffer, length), until_finish=large)


@entry
def model_set_operand_symm_per_channel_quant_params(handle: int, index: int,
                                                    params_address: int) -> None:
    require(model=handle, channelQuant=params_address)
    state = model_of(handle)
    model = state.modifiable()
    dims = state.operand(index).dimensions
    params = read_struct(SymmPerChannelQuantParamsStruct, params_address)
    if params.channelDim >= len(dims):
        raise BadDataError(f"channelDim {params.channelDim} is out of range for the"
                           f" {len(dims)} dimensions of operand {index}")
    if dims[params.channelDim] == 0:
        raise BadDataError(f"dimension {params.channelDim} of operand {index} is unspecified")
    if params.scaleCount != dims[params.channelDim]:
        raise BadDataError(f"scaleCount is {params.scaleCount}, dimension {params.channelDim}"
                           f" of operand {index} is {dims[params.channelDim]}")
    scales_address = ctypes.cast(params.scales, ctypes.c_void_p).value
    if not scales_address:
        raise BadDataError("scales is NULL")
    scales = read_array(ctypes.c_float, scales_address, params.scaleCount)
    model.set_operand_symm_per_channel_quant_params(index, scales, params.channelDim)


@entry
def model_set_operand_value_from_memory(handle: int, index: int, memory: int, offset: int,
                                        length: int) -> None:
    require(model=handle, memory=memory)
    state = model_of(handle)
    state.modifiable()
    state.operand(index)
    state.reference(index, memory_of(memory).region(offset, length, write=False))


@entry
def model_set_operand_value_from_model(handle: int, index: int, value: int) -> None:
    require(model=handle, value=value)
    state = model_of(handle)
    referenced = model_of(value, "value")
    if referenced is state:
        raise BadDataError("a model cannot refer to itself")
    if referenced.invalid:
        raise BadDataError("value is an invalid model: finishing it failed")
    state.refer_to_model(index, referenced.model)


@entry
def model_add_operation(handle: int, operation_type: int, input_count: int, inputs: int,
                        output_count: int, outputs: int) -> None:
    require(model=handle, inputs=inputs, outputs=outputs)
    model_of(handle).modifiable().add_operation(
        operation_type, read_array(ctypes.c_uint32, inputs, input_count),
        read_array(ctypes.c_uint32, outputs, output_count))


@entry
def model_identify_inputs_and_outputs(handle: int, input_count: int, inputs: int,
                                      output_count: int, outputs: int) -> None:
    require(model=handle, inputs=inputs, outputs=outputs)
    model_of(handle).modifiable().identify_inputs_and_outputs(
        read_array(ctypes.c_uint32, inputs, input_count),
        read_array(ctypes.c_uint32, outputs, output_count))


@entry
def model_relax_computation_float32to_float16(handle: int, allow: int) -> None:
    model_of(handle).modifiable().relax_computation_float32_to_float16(bool(allow))


@entry
def model_get_supported_operations_for_devices(handle: int, devices: int, count: int,
                                               supported: int) -> None:
    require(model=handle, devices=devices, supportedOps=supported)
    state = model_of(handle)
    if count == 0:
        raise BadDataError("the device list is empty")
    model = state.finished()
    answer = [False] * len(model.operations)
    for device in read_device_list(devices, count):
        # The profile answers per operation in run order; the caller's are in added order.
        for position, yes in zip(model.added_positions,
                                 supported_operations(device.profile, model), strict=True):
            answer[position] |= yes
    store_array(ctypes.c_bool, supported, answer)
