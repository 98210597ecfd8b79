"""The NNAPI Model: operands, operations, inputs and outputs, validated as NeuralNetworks.h says.

The API mirrors ANeuralNetworksModel_* (addOperand, setOperandValue, addOperation,
identifyInputsAndOutputs, finish) so the C library can forward calls one to one, and adds a few
conveniences (add_constant, add_scalar) for Python callers.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import numpy.typing as npt

from .codes import MAX_RANK, FeatureLevel, OperandType, OperationType
from .errors import BadDataError, BadStateError
from .operand_types import OperandTypeInfo, QuantKind, type_info, zero_point_range
from .signatures import (
    LevelRule,
    MatchFailure,
    RuleContext,
    SignatureMatch,
    match_signature,
    signature_of,
)


class Lifetime(Enum):
    TEMPORARY = "temporary"
    MODEL_INPUT = "model input"
    MODEL_OUTPUT = "model output"
    CONSTANT = "constant"
    NO_VALUE = "omitted"
    REFERENCED_MODEL = "a model reference"  # a MODEL operand set to another model


@dataclass(frozen=True)
class ChannelQuant:
    """Per-channel symmetric quantization: one scale per index along ``channel_dim``."""

    scales: tuple[float, ...]
    channel_dim: int


@dataclass
class Operand:
    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: ChannelQuant | None = None
    lifetime: Lifetime = Lifetime.TEMPORARY
    value: np.ndarray | None = None
    name: str | None = None
    # The model a MODEL operand refers to (set_operand_value_from_model).
    model: Model | None = None

    @property
    def info(self) -> OperandTypeInfo:
        return type_info(self.type)

    @property
    def is_scalar(self) -> bool:
        return self.info.is_scalar

    @property
    def rank_known(self) -> bool:
        return self.is_scalar or len(self.dimensions) > 0

    @property
    def fully_specified(self) -> bool:
        return self.rank_known and all(d > 0 for d in self.dimensions)

    def describe(self) -> str:
        if self.info.is_model:
            return self.type.name
        dims = "x".join(str(d) if d else "?" for d in self.dimensions) or "scalar"
        if self.is_scalar:
            dims = "scalar"
        elif not self.dimensions:
            dims = "rank ?"
        quant = ""
        if self.info.quant in (QuantKind.ASYMMETRIC, QuantKind.SYMMETRIC):
            quant = f" scale={self.scale:g} zp={self.zero_point}"
        elif self.channel_quant is not None:
            quant = f" per-channel dim={self.channel_quant.channel_dim}"
        return f"{self.type.name}[{dims}]{quant}"


@dataclass(frozen=True)
class Operation:
    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def element_count(dimensions: Iterable[int]) -> int:
    return int(math.prod(dimensions))


@dataclass
class Model:
    """A graph of NNAPI operations. Build it, then ``finish()`` to validate and freeze it."""

    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    relax_float32_to_float16: bool = False
    finished: bool = False
    # Filled by finish(): the signature each operation matched, in operation order.
    matches: list[SignatureMatch] = field(default_factory=list)
    # Filled by finish(), which sorts the operations into run order: the position each had
    # when it was added (what C callers' per-operation answers are indexed by).
    added_positions: list[int] = field(default_factory=list)

    # ---------------------------------------------------------------- building

    def add_operand(self, type: OperandType | int, dimensions: Sequence[int] = (),
                    scale: float = 0.0, zero_point: int = 0, *, name: str | None = None) -> int:
        """Adds an operand (a tensor with 0 for unknown dimensions, or a scalar)."""
        self._check_building("add_operand")
        index = len(self.operands)
        where = f"operand {index}" + (f" ({name!r})" if name else "")
        try:
            op_type = OperandType(type)
        except ValueError:
            raise BadDataError(f"{where}: unknown operand type code {int(type)}") from None
        dims = tuple(int(d) for d in dimensions)
        if any(d < 0 for d in dims):
            raise BadDataError(f"{where}: negative dimension in {list(dims)}")
        if len(dims) > MAX_RANK:
            raise BadDataError(f"{where}: {len(dims)} dimensions, more than the {MAX_RANK} any"
                               " NNAPI operation takes")
        info = type_info(op_type)
        zero_point = int(zero_point)
        if info.is_scalar and dims:
            raise BadDataError(f"{where}: scalar type {op_type.name} cannot have dimensions {dims}")
        if not math.isfinite(float(scale)) or not math.isfinite(_float32(scale)):
            raise BadDataError(f"{where}: scale {float(scale):g} is not a finite float32")
        # NNAPI's scale is a C float: computing with the float64 given would differ from the
        # C API and from devices by a quantum now and then
        scale = _float32(scale)
        if info.quant in (QuantKind.ASYMMETRIC, QuantKind.SYMMETRIC):
            lo, hi = zero_point_range(op_type)
            if not lo <= zero_point <= hi:
                raise BadDataError(f"{where}: {op_type.name} zero point {zero_point} is outside"
                                   f" [{lo}, {hi}]")
            if scale <= 0:
                raise BadDataError(f"{where}: {op_type.name} needs a positive scale, got {scale}")
        elif op_type != OperandType.TENSOR_INT32 and (scale != 0 or zero_point != 0):
            raise BadDataError(f"{where}: {op_type.name} takes no scale or zero point"
                               f" (got {scale}, {zero_point})")
        self.operands.append(Operand(op_type, dims, scale, zero_point, name=name))
        return index

    def set_operand_value(self, index: int, value: npt.ArrayLike | None, *,
                          copy: bool = True) -> None:
        """Makes an operand constant, or omitted when ``value`` is None.

        ``value`` is array-like or a bytes-like buffer in the operand's element type. With
        ``copy=False`` a buffer is referenced, not copied, as NNAPI does for large values.
        """
        self._check_building("set_operand_value")
        operand = self._operand(index, "set_operand_value")
        where = self._where(index)
        if operand.lifetime in (Lifetime.MODEL_INPUT, Lifetime.MODEL_OUTPUT):
            raise BadDataError(f"{where} is a {operand.lifetime.value} and cannot have a value")
        if operand.info.is_model:
            raise BadDataError(f"{where} is a MODEL operand: set it with"
                               " set_operand_value_from_model")
        if value is None:
            operand.lifetime, operand.value = Lifetime.NO_VALUE, None
            return
        if not operand.fully_specified:
            raise BadDataError(f"{where}: a constant needs fully specified dimensions,"
                               f" got {list(operand.dimensions)}")
        shape = operand.dimensions if operand.info.is_tensor else ()
        operand.value = _coerce_value(value, operand, shape, where, copy)
        operand.lifetime = Lifetime.CONSTANT

    def set_operand_value_from_model(self, index: int, model: Model) -> None:
        """Makes MODEL operand ``index`` refer to ``model`` (a finished model), the branch,
        condition or body of an IF or WHILE operation."""
        self._check_building("set_operand_value_from_model")
        operand = self._operand(index, "set_operand_value_from_model")
        where = self._where(index)
        if not operand.info.is_model:
            raise BadDataError(f"{where} is {operand.type.name}; only a MODEL operand refers to"
                               " a model")
        if operand.lifetime in (Lifetime.MODEL_INPUT, Lifetime.MODEL_OUTPUT):
            raise BadDataError(f"{where} is a {operand.lifetime.value} and cannot refer to a"
                               " model")
        if not isinstance(model, Model):
            raise BadDataError(f"{where}: expected a Model to refer to, got"
                               f" {type(model).__name__}")
        if model is self or not model.finished:
            raise BadDataError(f"{where}: the referenced model must be finished first")
        operand.model, operand.value = model, None
        operand.lifetime = Lifetime.REFERENCED_MODEL

    def set_operand_symm_per_channel_quant_params(self, index: int, scales: Sequence[float],
                                                  channel_dim: int) -> None:
        self._check_building("set_operand_symm_per_channel_quant_params")
        operand = self._operand(index, "set_operand_symm_per_channel_quant_params")
        where = self._where(index)
        if operand.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise BadDataError(f"{where}: per-channel parameters need"
                               f" TENSOR_QUANT8_SYMM_PER_CHANNEL, not {operand.type.name}")
        if not 0 <= channel_dim < len(operand.dimensions):
            raise BadDataError(f"{where}: channel dimension {channel_dim} is out of range for"
                               f" rank {len(operand.dimensions)}")
        scales = tuple(_float32(s) for s in scales)
        expected = operand.dimensions[channel_dim]
        if expected and len(scales) != expected:
            raise BadDataError(f"{where}: {len(scales)} scales for a channel dimension of size"
                               f" {expected}")
        if any(not (s > 0 and math.isfinite(s)) for s in scales):
            raise BadDataError(f"{where}: per-channel scales must be positive, got {scales}")
        operand.channel_quant = ChannelQuant(scales, channel_dim)

    def add_operation(self, type: OperationType | int, inputs: Sequence[int],
                      outputs: Sequence[int]) -> int:
        """Adds an operation; operand counts and types are checked against its signature."""
        self._check_building("add_operation")
        index = len(self.operations)
        try:
            op_type = OperationType(type)
        except ValueError:
            raise BadDataError(f"operation {index}: unknown operation type code {int(type)}") \
                from None
        where = f"operation {index} ({op_type.name})"
        for kind, indices in (("input", inputs), ("output", outputs)):
            for pos, i in enumerate(indices):
                if not 0 <= int(i) < len(self.operands):
                    raise BadDataError(f"{where}: {kind} {pos} refers to operand {i}, but the"
                                       f" model has {len(self.operands)} operands")
        operation = Operation(op_type, tuple(int(i) for i in inputs),
                              tuple(int(i) for i in outputs))
        self._match(index, operation, check_omitted=False)
        self.operations.append(operation)
        return index

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self._check_building("identify_inputs_and_outputs")
        for kind, indices in (("input", inputs), ("output", outputs)):
            for pos, i in enumerate(indices):
                operand = self._operand(i, f"model {kind} {pos}")
                if operand.info.is_model:
                    raise BadDataError(f"model {kind} {pos}: {self._where(i)} is a MODEL"
                                       " operand; model references cannot be inputs or outputs")
                if operand.lifetime in (Lifetime.CONSTANT, Lifetime.NO_VALUE):
                    raise BadDataError(f"model {kind} {pos}: {self._where(i)} is"
                                       f" {operand.lifetime.value}, not a variable")
        if len(set(inputs)) != len(inputs) or len(set(outputs)) != len(outputs):
            raise BadDataError("an operand is listed twice among the model inputs or outputs")
        if set(inputs) & set(outputs):
            raise BadDataError("an operand cannot be both a model input and a model output")
        for i in self.inputs + self.outputs:
            self.operands[i].lifetime = Lifetime.TEMPORARY
        self.inputs, self.outputs = [int(i) for i in inputs], [int(i) for i in outputs]
        for i in self.inputs:
            self.operands[i].lifetime = Lifetime.MODEL_INPUT
        for i in self.outputs:
            self.operands[i].lifetime = Lifetime.MODEL_OUTPUT

    def relax_computation_float32_to_float16(self, allow: bool) -> None:
        self._check_building("relax_computation_float32_to_float16")
        self.relax_float32_to_float16 = bool(allow)

    # ---------------------------------------------------------------- conveniences

    def add_constant(self, type: OperandType | int, value: npt.ArrayLike, scale: float = 0.0,
                     zero_point: int = 0, *, name: str | None = None) -> int:
        """Adds a constant tensor whose dimensions are those of ``value``."""
        array = np.asarray(value)
        index = self.add_operand(type, array.shape, scale, zero_point, name=name)
        self.set_operand_value(index, array)
        return index

    def add_scalar(self, type: OperandType | int, value: npt.ArrayLike, *,
                   name: str | None = None) -> int:
        index = self.add_operand(type, (), name=name)
        self.set_operand_value(index, value)
        return index

    def add_model_operand(self, referenced: Model, *, name: str | None = None) -> int:
        """Adds a MODEL operand that refers to ``referenced`` (a finished model)."""
        index = self.add_operand(OperandType.MODEL, name=name)
        self.set_operand_value_from_model(index, referenced)
        return index

    # ---------------------------------------------------------------- finishing

    def finish(self) -> Model:
        """Validates the whole model, sorts operations into run order and freezes it."""
        self._check_building("finish")
        if not self.outputs:
            raise BadDataError("the model has no outputs (call identify_inputs_and_outputs)")
        for index, operand in enumerate(self.operands):
            if operand.info.is_model and operand.lifetime is not Lifetime.REFERENCED_MODEL:
                raise BadDataError(f"{self._where(index)} is a MODEL operand that refers to no"
                                   " model (call set_operand_value_from_model)")
        written: dict[int, int] = {}
        for index, operation in enumerate(self.operations):
            for pos, o in enumerate(operation.outputs):
                operand = self.operands[o]
                if operand.lifetime not in (Lifetime.TEMPORARY, Lifetime.MODEL_OUTPUT):
                    raise BadDataError(f"operation {index} ({operation.type.name}): output {pos}"
                                       f" writes {self._where(o)}, which is"
                                       f" {operand.lifetime.value}")
                if o in written:
                    raise BadDataError(f"{self._where(o)} is written by operations {written[o]}"
                                       f" and {index}")
                written[o] = index
        for index, operation in enumerate(self.operations):
            for pos, i in enumerate(operation.inputs):
                operand = self.operands[i]
                if operand.lifetime in (Lifetime.TEMPORARY, Lifetime.MODEL_OUTPUT) \
                        and i not in written:
                    raise BadDataError(f"operation {index} ({operation.type.name}): input {pos}"
                                       f" reads {self._where(i)}, which has no value and is"
                                       " written by no operation")
        for pos, o in enumerate(self.outputs):
            if o not in written:
                raise BadDataError(f"model output {pos} ({self._where(o)}) is written by no"
                                   " operation")
        self.added_positions = self._run_order(written)
        self.operations = [self.operations[i] for i in self.added_positions]
        self.matches = [self._match(i, op, check_omitted=True)
                        for i, op in enumerate(self.operations)]
        self.finished = True
        return self

    @property
    def feature_level(self) -> FeatureLevel:
        """The lowest NNAPI feature level that can run this (finished) model."""
        if not self.finished:
            raise BadStateError("feature_level needs a finished model")
        level = max((m.level for m in self.matches), default=1)
        if any(o.type in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16)
               for o in self.operands) or self.relax_float32_to_float16:
            level = max(level, 2 if self.relax_float32_to_float16 else 3)
        level = max([level, *(int(m.feature_level) for m in self.referenced_models())])
        return FeatureLevel(level)

    def referenced_models(self) -> list[Model]:
        """Every model this one refers to, directly or through others, each once, a model
        after the models it refers to."""
        ordered: list[Model] = []

        def visit(model: Model) -> None:
            for operand in model.operands:
                inner = operand.model
                if inner is not None and all(inner is not m for m in ordered):
                    visit(inner)
                    ordered.append(inner)

        visit(self)
        return ordered

    def describe_operand(self, index: int) -> str:
        return f"{self._where(index)} {self.operands[index].describe()}"

    # ---------------------------------------------------------------- internals

    def _run_order(self, written: dict[int, int]) -> list[int]:
        """The operations' positions sorted so every input is computed first (stable; cycles
        are errors)."""
        pending = [
            sum(1 for i in set(op.inputs) if i in written) for op in self.operations
        ]
        readers: dict[int, list[int]] = {}
        for index, op in enumerate(self.operations):
            for i in set(op.inputs):
                readers.setdefault(i, []).append(index)
        ready = [i for i, n in enumerate(pending) if n == 0]
        order: list[int] = []
        heapq.heapify(ready)
        while ready:
            index = heapq.heappop(ready)
            order.append(index)
            for o in self.operations[index].outputs:
                for reader in readers.get(o, []):
                    pending[reader] -= 1
                    if pending[reader] == 0:
                        heapq.heappush(ready, reader)
        if len(order) != len(self.operations):
            stuck = sorted(set(range(len(self.operations))) - set(order))
            names = ", ".join(f"{i} ({self.operations[i].type.name})" for i in stuck[:5])
            raise BadDataError(f"the operations form a cycle; operations {names} never run")
        return order

    def _match(self, index: int, operation: Operation, check_omitted: bool) -> SignatureMatch:
        where = f"operation {index} ({operation.type.name})"
        try:
            signature = signature_of(operation.type)
        except NotImplementedError as e:
            raise BadDataError(f"{where}: {e}") from None
        in_types = [self.operands[i].type for i in operation.inputs]
        out_types = [self.operands[o].type for o in operation.outputs]
        omitted = [check_omitted and self.operands[i].lifetime is Lifetime.NO_VALUE
                   for i in operation.inputs]
        result = match_signature(signature, in_types, out_types, omitted)
        if isinstance(result, MatchFailure):
            message = f"{where}: {result.message}"
            if result.direction:
                indices = operation.inputs if result.direction == "input" else operation.outputs
                message += (f"; {result.direction} {result.position} is"
                            f" {self._where(indices[result.position])}")
            raise BadDataError(message)
        if check_omitted:
            ctx = RuleContext(self.operands, operation.inputs, operation.outputs, result)
            for r in signature.rules:
                if isinstance(r, LevelRule):
                    result.level = max(result.level, r.needs(ctx) or 0)
                    continue
                problem = r.check(ctx)
                if problem:
                    raise BadDataError(f"{where}: {problem}")
            for pos, o in enumerate(operation.outputs):
                if self.operands[o].type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                    raise BadDataError(f"{where}: output {pos} cannot be per-channel quantized")
            for pos, i in enumerate(operation.inputs):
                operand = self.operands[i]
                if operand.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL \
                        and operand.channel_quant is None:
                    raise BadDataError(f"{where}: input {pos} ({self._where(i)}) has no"
                                       " per-channel quantization parameters")
        return result

    def _check_building(self, call: str) -> None:
        if self.finished:
            raise BadStateError(f"{call}: the model is finished and can no longer change")

    def _operand(self, index: object, call: str) -> Operand:
        """The operand at ``index`` as a caller passed it (the C API forwards any integer)."""
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.operands):
            raise BadDataError(f"{call}: operand index {index} is out of range (the model has"
                               f" {len(self.operands)} operands)")
        return self.operands[int(index)]

    def _where(self, index: int) -> str:
        name = self.operands[index].name
        return f"operand {index}" + (f" ({name!r})" if name else "")


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32 (inf beyond its range), as a Python float."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _coerce_value(value: npt.ArrayLike, operand: Operand, shape: tuple[int, ...], where: str,
                  copy: bool) -> np.ndarray:
    """Turns a Python value or raw buffer into an array of the operand's dtype and shape."""
    dtype = operand.info.dtype
    count = element_count(shape)
    if isinstance(value, (bytes, bytearray, memoryview)):
        nbytes = memoryview(value).nbytes
        if nbytes != count * dtype.itemsize:
            raise BadDataError(f"{where}: value has {nbytes} bytes, {operand.describe()} needs"
                               f" {count * dtype.itemsize}")
        array = np.frombuffer(value, dtype=dtype, count=count).reshape(shape)
        return array.copy() if copy else array
    array = np.asarray(value)
    if array.size != count:
        raise BadDataError(f"{where}: value has {array.size} elements, {operand.describe()}"
                           f" needs {count}")
    if array.dtype != dtype:
        if dtype.kind in "iu" or dtype == np.dtype("u1"):
            if array.dtype.kind == "f" and not np.all(np.equal(np.mod(array, 1), 0)):
                raise BadDataError(f"{where}: non-integer values for {operand.type.name}")
            limits = np.iinfo(dtype)
            if array.size and (array.min() < limits.min or array.max() > limits.max):
                raise BadDataError(f"{where}: values outside [{limits.min}, {limits.max}] for"
                                   f" {operand.type.name}")
        array = array.astype(dtype)
    return np.array(array.reshape(shape), copy=True) if copy else array.reshape(shape)
