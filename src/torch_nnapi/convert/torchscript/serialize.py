"""Our NNAPI Model -> the serialized form PyTorch's NNAPI runtime loads.

The format is the one ``aten/src/ATen/nnapi/nnapi_model_loader.cpp`` reads: a list of
arguments for the ANeuralNetworksModel_* calls, as little-endian 32-bit words::

    header    version=1, operand_count, value_count, operation_count, input_count,
              output_count
    operands  (type, dimension_count, scale: float32, zero_point) per operand
    values    (operand index, source type, source length) per constant operand
    operations (type, input_count, output_count) per operation
    dimensions of every operand, concatenated
    value data: immediate bytes padded to 4, or (buffer number, offset, length) for a
              NUMBERED_BUFFER value that lives in one of the weight tensors
    operation arguments (inputs then outputs of each operation), model inputs, outputs

Large constants go to weight buffers (passed to ``Compilation.init2`` as tensors); small
ones are immediate. Dimensions and INT32 values that depend on flexible input dimensions
are written with their example value (0 for dimensions) and listed as patches: the word
offset and the program that computes the real value at load time.

The format cannot express per-channel quantization parameters or omitted operands, so the
converter never produces them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.model import Lifetime, Model
from ..builder.symbolic import Sym, SymInt, program

VERSION = 1
SOURCE_IMMEDIATE = 0
SOURCE_NUMBERED_BUFFER = 2
SOURCE_NUMBERED_MEMORY = 3
HEADER_WORDS = 6

# Constants larger than this go to a weight buffer instead of the serialized model.
IMMEDIATE_LIMIT_BYTES = 64


@dataclass
class Patch:
    """Word ``offset`` of the serialized model is set to ``program``'s value at load."""

    offset: int
    program: list[int]
    what: str = ""


@dataclass
class SerializedModel:
    words: np.ndarray  # int32
    weights: list[np.ndarray]
    patches: list[Patch] = field(default_factory=list)


def padded_size(n: int) -> int:
    """``n`` bytes rounded up to whole 32-bit words, as the format stores every buffer (the
    reader skips the same padding)."""
    return (n + 3) & ~3


def serialize(model: Model, sym_dims: Mapping[int, Sequence[SymInt]] | None = None,
              sym_values: Mapping[int, Sequence[SymInt]] | None = None,
              immediate_limit: int = IMMEDIATE_LIMIT_BYTES) -> SerializedModel:
    """Serializes a finished model (see the module docstring for the layout)."""
    if not model.finished:
        raise ValueError("serialize needs a finished model")
    sym_dims = dict(sym_dims or {})
    sym_values = dict(sym_values or {})
    operands = model.operands

    head = bytearray()
    constants = []
    for index, o in enumerate(operands):
        if o.channel_quant is not None or o.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise ValueError(f"operand {index}: per-channel quantization parameters cannot be"
                             " serialized for PyTorch's NNAPI loader")
        if o.lifetime is Lifetime.NO_VALUE:
            raise ValueError(f"operand {index}: omitted operands cannot be serialized for"
                             " PyTorch's NNAPI loader")
        head += struct.pack("<iIfi", int(o.type), len(o.dimensions), float(o.scale),
                            int(o.zero_point))
        if o.lifetime is Lifetime.CONSTANT:
            constants.append(index)

    weights: list[np.ndarray] = []
    value_records = bytearray()
    value_data: list[bytes] = []
    immediate_at: dict[int, int] = {}  # operand -> byte offset of its data in value_data
    data_bytes = 0
    for index in constants:
        array = np.ascontiguousarray(operands[index].value)
        raw = array.tobytes()
        if len(raw) <= immediate_limit or index in sym_values:
            value_records += struct.pack("<iiI", index, SOURCE_IMMEDIATE, len(raw))
            immediate_at[index] = data_bytes
            chunk = raw + b"\0" * (padded_size(len(raw)) - len(raw))
        else:
            value_records += struct.pack("<iiI", index, SOURCE_NUMBERED_BUFFER, 12)
            chunk = struct.pack("<III", len(weights), 0, len(raw))
            weights.append(array.reshape(-1).view(np.uint8) if array.dtype == np.bool_
                           else array)
        value_data.append(chunk)
        data_bytes += len(chunk)

    operation_records = bytearray()
    args: list[int] = []
    for op in model.operations:
        operation_records += struct.pack("<iII", int(op.type), len(op.inputs), len(op.outputs))
        args.extend(op.inputs)
        args.extend(op.outputs)

    header = struct.pack("<6i", VERSION, len(operands), len(constants), len(model.operations),
                         len(model.inputs), len(model.outputs))
    prefix = header + bytes(head) + bytes(value_records) + bytes(operation_records)
    patches: list[Patch] = []
    offset = len(prefix) // 4
    dims_words: list[int] = []
    for index, o in enumerate(operands):
        symbolic = sym_dims.get(index)
        for k, d in enumerate(o.dimensions):
            if symbolic is not None and isinstance(symbolic[k], Sym):
                patches.append(Patch(offset, program(symbolic[k]),
                                     f"operand {index} dimension {k}"))
            dims_words.append(int(d))
            offset += 1
    data_offset = offset
    for index, values in sym_values.items():
        base = data_offset + immediate_at[index] // 4
        for k, v in enumerate(values):
            if isinstance(v, Sym):
                patches.append(Patch(base + k, program(v), f"operand {index} value {k}"))

    body = (np.asarray(dims_words, dtype="<u4").tobytes() + b"".join(value_data)
            + np.asarray(args + list(model.inputs) + list(model.outputs), dtype="<u4").tobytes())
    blob = prefix + body
    assert len(blob) % 4 == 0
    words = np.frombuffer(blob, dtype="<i4").copy()
    return SerializedModel(words, weights, patches)
