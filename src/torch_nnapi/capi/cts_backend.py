"""The conformance tests through libneuralnetworks.so, driven with ctypes only.

``CApiBackend`` builds each spec model with ANeuralNetworksModel_* calls (the models IF and
WHILE call first, each finished before setOperandValueFromModel refers to it) and runs examples
as a C client would: inputs with their actual dimensions, omitted inputs as NULL buffers,
outputs of unknown size into a first guess that is enlarged after OUTPUT_INSUFFICIENT_SIZE, and
the actual dimensions read with getOutputOperandRank/Dimensions.
"""

from __future__ import annotations

import ctypes
import logging
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..conformance.spec import operand_type as spec_operand_type
from ..conformance.spec import referenced_model_order
from ..nnapi.codes import OperandType, ResultCode
from ..nnapi.errors import NnapiError
from ..nnapi.operand_types import type_info
from . import load
from ._abi import OperandTypeStruct, SymmPerChannelQuantParamsStruct
from ._calls import last_error

FIRST_GUESS_BYTES = 1024  # output buffer when the model leaves the output's size open


class CApiError(NnapiError):
    """A C API call returned an error code."""


def check(code: int, call: str) -> None:
    if code != ResultCode.NO_ERROR:
        raise CApiError(f"{call} returned {ResultCode(code).name}: {last_error()}",
                        ResultCode(code))


def operand_type(operand_type_code: int, dimensions, scale: float = 0.0,
                 zero_point: int = 0) -> OperandTypeStruct:
    """An ANeuralNetworksOperandType; it keeps its dimension array alive."""
    dims = (ctypes.c_uint32 * len(dimensions))(*dimensions) if len(dimensions) else None
    struct = OperandTypeStruct(int(operand_type_code), len(dimensions), dims, scale, zero_point)
    struct._dims = dims
    return struct


@dataclass
class PreparedModel:
    """A finished model and its compilation (freed with this object), and the models it
    refers to (kept, and freed, with it)."""

    operands: list[dict]
    inputs: list[int]
    outputs: list[int]
    model: ctypes.c_void_p = field(default_factory=ctypes.c_void_p)
    compilation: ctypes.c_void_p = field(default_factory=ctypes.c_void_p)
    values: list[Any] = field(default_factory=list)  # referenced until the model is finished
    referenced: dict[int, ctypes.c_void_p] = field(default_factory=dict)

    def output_dtype(self, pos: int) -> np.dtype:
        return type_info(spec_operand_type(self.operands[self.outputs[pos]])).dtype

    def output_bytes(self, pos: int) -> int | None:
        """The size of an output the model fully specifies, else None."""
        operand = self.operands[self.outputs[pos]]
        dims = operand["dimensions"]
        if type_info(spec_operand_type(operand)).is_tensor and not (dims and all(dims)):
            return None
        return int(np.prod(dims)) * self.output_dtype(pos).itemsize


def _typed(values: list, code: OperandType) -> np.ndarray:
    info = type_info(code)
    return np.asarray(values, dtype=np.float64 if info.is_float else np.int64).astype(info.dtype)


def _indices(values: list[int]):
    return len(values), (ctypes.c_uint32 * len(values))(*values)


class CApiBackend:
    """The conformance backend that calls libneuralnetworks.so."""

    name = "capi"

    def __init__(self) -> None:
        self.lib = load()
        # The library logs every failed call; the runner reports failures itself (and the
        # tests that expect failure fail on purpose), so its log stays quiet here.
        logging.getLogger("torch_nnapi.capi").addHandler(logging.NullHandler())

    # ------------------------------------------------------------ building

    def prepare(self, spec_model: dict) -> PreparedModel:
        lib = self.lib
        prepared = PreparedModel(spec_model["operands"], spec_model["inputs"],
                                 spec_model["outputs"])
        for k in referenced_model_order(spec_model):
            prepared.referenced[k] = self._build(prepared, spec_model["referenced"][k])
        prepared.model = self._build(prepared, spec_model)
        check(lib.ANeuralNetworksCompilation_create(prepared.model,
                                                    ctypes.byref(prepared.compilation)),
              "Compilation_create")
        weakref.finalize(prepared, lib.ANeuralNetworksCompilation_free,
                         prepared.compilation.value)
        check(lib.ANeuralNetworksCompilation_finish(prepared.compilation), "Compilation_finish")
        return prepared

    def _build(self, prepared: PreparedModel, spec_model: dict) -> ctypes.c_void_p:
        """One finished model, freed with ``prepared``; the models it refers to are in
        ``prepared.referenced`` already."""
        lib, model = self.lib, ctypes.c_void_p()
        check(lib.ANeuralNetworksModel_create(ctypes.byref(model)), "Model_create")
        weakref.finalize(prepared, lib.ANeuralNetworksModel_free, model.value)
        for index, operand in enumerate(spec_model["operands"]):
            self._add_operand(prepared, model, index, operand)
        for operation in spec_model["operations"]:
            check(lib.ANeuralNetworksModel_addOperation(
                model, operation["code"], *_indices(operation["inputs"]),
                *_indices(operation["outputs"])), "Model_addOperation")
        check(lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            model, *_indices(spec_model["inputs"]), *_indices(spec_model["outputs"])),
            "Model_identifyInputsAndOutputs")
        check(lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(
            model, bool(spec_model.get("relaxComputationFloat32toFloat16", False))),
            "Model_relaxComputationFloat32toFloat16")
        check(lib.ANeuralNetworksModel_finish(model), "Model_finish")
        prepared.values.clear()
        return model

    def _add_operand(self, prepared: PreparedModel, model: ctypes.c_void_p, index: int,
                     operand: dict) -> None:
        lib, code = self.lib, spec_operand_type(operand)
        t = operand_type(code, operand["dimensions"], operand["scale"], operand["zeroPoint"])
        check(lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(t)), "Model_addOperand")
        quant = operand.get("channelQuant")
        if quant:
            scales = (ctypes.c_float * len(quant["scales"]))(*quant["scales"])
            params = SymmPerChannelQuantParamsStruct(quant["channelDim"], len(scales), scales)
            check(lib.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
                model, index, ctypes.byref(params)), "Model_setOperandSymmPerChannelQuantParams")
        if "value" not in operand:
            return
        if code == OperandType.MODEL:
            check(lib.ANeuralNetworksModel_setOperandValueFromModel(
                model, index, prepared.referenced[int(operand["value"][0])]),
                "Model_setOperandValueFromModel")
            return
        if not operand["value"]:  # an omitted optional operand
            check(lib.ANeuralNetworksModel_setOperandValue(model, index, None, 0),
                  "Model_setOperandValue")
            return
        value = _typed(operand["value"], code)
        prepared.values.append(value)
        check(lib.ANeuralNetworksModel_setOperandValue(model, index, value.ctypes.data,
                                                       value.nbytes), "Model_setOperandValue")

    # ------------------------------------------------------------ executing

    def execute(self, prepared: PreparedModel, inputs: list[np.ndarray | None]) \
            -> list[np.ndarray]:
        capacities = [prepared.output_bytes(p) or FIRST_GUESS_BYTES
                      for p in range(len(prepared.outputs))]
        buffers = [np.zeros(c, np.uint8) for c in capacities]
        code, shapes = self._compute(prepared, inputs, buffers)
        if code == ResultCode.OUTPUT_INSUFFICIENT_SIZE:  # the sizes are known now: retry once
            buffers = [np.zeros(max(c, int(np.prod(s)) * prepared.output_dtype(p).itemsize),
                                np.uint8)
                       for p, (c, s) in enumerate(zip(capacities, shapes))]
            code, shapes = self._compute(prepared, inputs, buffers)
        check(code, "Execution_compute")
        results = []
        for pos, (buffer, shape) in enumerate(zip(buffers, shapes)):
            dtype = prepared.output_dtype(pos)
            results.append(buffer[:int(np.prod(shape)) * dtype.itemsize].view(dtype)
                           .reshape(shape))
        return results

    def _compute(self, prepared: PreparedModel, inputs: list[np.ndarray | None],
                 buffers: list[np.ndarray]) -> tuple[int, list[tuple[int, ...]]]:
        """Runs one execution; its result code and (when it computed) output dimensions."""
        lib = self.lib
        execution = ctypes.c_void_p()
        check(lib.ANeuralNetworksExecution_create(prepared.compilation, ctypes.byref(execution)),
              "Execution_create")
        try:
            keep = [self._set_input(prepared, execution, p, a) for p, a in enumerate(inputs)]
            for pos, buffer in enumerate(buffers):
                check(lib.ANeuralNetworksExecution_setOutput(execution, pos, None,
                                                             buffer.ctypes.data, buffer.nbytes),
                      "Execution_setOutput")
            code = lib.ANeuralNetworksExecution_compute(execution)
            del keep
            if code not in (ResultCode.NO_ERROR, ResultCode.OUTPUT_INSUFFICIENT_SIZE):
                return code, []
            return code, [self._output_shape(execution, p) for p in range(len(buffers))]
        finally:
            lib.ANeuralNetworksExecution_free(execution)

    def _set_input(self, prepared: PreparedModel, execution: ctypes.c_void_p, pos: int,
                   array: np.ndarray | None) -> tuple:
        if array is None:  # omitted
            check(self.lib.ANeuralNetworksExecution_setInput(execution, pos, None, None, 0),
                  "Execution_setInput")
            return ()
        operand = prepared.operands[prepared.inputs[pos]]
        code = spec_operand_type(operand)
        data = np.ascontiguousarray(array, dtype=type_info(code).dtype)
        t = operand_type(code, data.shape, operand["scale"], operand["zeroPoint"])
        check(self.lib.ANeuralNetworksExecution_setInput(execution, pos, ctypes.byref(t),
                                                         data.ctypes.data, data.nbytes),
              "Execution_setInput")
        return data, t  # the runtime reads the buffer when the execution computes

    def _output_shape(self, execution: ctypes.c_void_p, pos: int) -> tuple[int, ...]:
        sufficient = (ResultCode.NO_ERROR, ResultCode.OUTPUT_INSUFFICIENT_SIZE)
        rank = ctypes.c_uint32()
        code = self.lib.ANeuralNetworksExecution_getOutputOperandRank(execution, pos,
                                                                      ctypes.byref(rank))
        if code not in sufficient:
            check(code, "Execution_getOutputOperandRank")
        if rank.value == 0:
            return ()
        dims = (ctypes.c_uint32 * rank.value)()
        code = self.lib.ANeuralNetworksExecution_getOutputOperandDimensions(execution, pos, dims)
        if code not in sufficient:
            check(code, "Execution_getOutputOperandDimensions")
        return tuple(dims)
