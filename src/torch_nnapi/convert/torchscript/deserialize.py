"""The serialized model PyTorch's NNAPI runtime loads -> our NNAPI Model.

The inverse of ``serialize.py``, reading exactly what ``nnapi_model_loader.cpp`` reads,
with the same bounds checks, so ``torch-nnapi inspect`` can show a converted module's model
and the host runtime can execute it. Never imports torch: weight buffers are any objects
exposing the buffer protocol (NumPy arrays, bytes).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...nnapi.errors import BadDataError
from ...nnapi.model import Model
from .serialize import (
    HEADER_WORDS,
    SOURCE_IMMEDIATE,
    SOURCE_NUMBERED_BUFFER,
    SOURCE_NUMBERED_MEMORY,
    VERSION,
    padded_size,
)


@dataclass
class ValueSource:
    operand: int
    source: str  # "immediate" or "buffer N"
    length: int


@dataclass
class Deserialized:
    model: Model
    values: list[ValueSource] = field(default_factory=list)
    bytes_consumed: int = 0


def _as_bytes(words: npt.ArrayLike) -> bytes:
    if isinstance(words, (bytes, bytearray, memoryview)):
        return bytes(words)
    array = np.ascontiguousarray(np.asarray(words))
    if array.dtype != np.int32 and array.dtype != np.uint8:
        array = array.astype("<i4")
    return array.tobytes()


def deserialize(serialized: npt.ArrayLike, weights: Sequence[npt.ArrayLike] = (), *,
                finish: bool = True) -> Deserialized:
    """Builds a Model from serialized words (int32 array or bytes) and weight buffers (any
    objects exposing the buffer protocol)."""
    blob = _as_bytes(serialized)
    buffers = [np.ascontiguousarray(w).data.cast("B") if not isinstance(
        w, (bytes, bytearray)) else memoryview(w) for w in weights]
    reader = _Reader(blob)
    version, n_operands, n_values, n_operations, n_inputs, n_outputs = reader.ints(HEADER_WORDS)
    if version != VERSION:
        raise BadDataError(f"serialized model version {version}, expected {VERSION}")
    for name, n in (("operand", n_operands), ("value", n_values), ("operation", n_operations),
                    ("input", n_inputs), ("output", n_outputs)):
        if not 0 <= n < (1 << 24):
            raise BadDataError(f"serialized model: {name} count {n} is out of range")
    operands = [struct.unpack_from("<iIfi", reader.take(16)) for _ in range(n_operands)]
    values = [struct.unpack_from("<iiI", reader.take(12)) for _ in range(n_values)]
    operations = [struct.unpack_from("<iII", reader.take(12)) for _ in range(n_operations)]

    model = Model()
    for op_type, rank, scale, zero_point in operands:
        dims = reader.uints(rank)
        model.add_operand(op_type, dims, scale, zero_point)
    sources = []
    for op_index, source_type, length in values:
        data = reader.take(padded_size(length))[:length]
        if source_type == SOURCE_IMMEDIATE:
            model.set_operand_value(op_index, data)
            sources.append(ValueSource(op_index, "immediate", length))
        elif source_type == SOURCE_NUMBERED_BUFFER:
            if length != 12:
                raise BadDataError(f"operand {op_index}: a numbered-buffer value needs 12 bytes"
                                   f" of location, got {length}")
            number, offset, size = struct.unpack("<III", data)
            if number >= len(buffers):
                raise BadDataError(f"operand {op_index}: weight buffer {number} does not exist"
                                   f" ({len(buffers)} given)")
            if offset + size > buffers[number].nbytes:
                raise BadDataError(f"operand {op_index}: bytes {offset}..{offset + size} are"
                                   f" outside weight buffer {number} of"
                                   f" {buffers[number].nbytes} bytes")
            model.set_operand_value(op_index, buffers[number][offset:offset + size])
            sources.append(ValueSource(op_index, f"buffer {number}", size))
        elif source_type == SOURCE_NUMBERED_MEMORY:
            raise BadDataError(f"operand {op_index}: memory-backed values are not supported"
                               " (nor by PyTorch's loader)")
        else:
            raise BadDataError(f"operand {op_index}: unknown value source type {source_type}")
    for op_type, n_in, n_out in operations:
        ins = reader.uints(n_in)
        outs = reader.uints(n_out)
        model.add_operation(op_type, ins, outs)
    inputs = reader.uints(n_inputs)
    outputs = reader.uints(n_outputs)
    model.identify_inputs_and_outputs(inputs, outputs)
    if finish:
        model.finish()
    return Deserialized(model, sources, reader.position)


class _Reader:
    def __init__(self, blob: bytes):
        self.blob = blob
        self.position = 0

    def take(self, n: int) -> bytes:
        end = self.position + n
        if end > len(self.blob):
            raise BadDataError(f"serialized model is truncated: needs {end} bytes, has"
                               f" {len(self.blob)}")
        out = self.blob[self.position:end]
        self.position = end
        return out

    def ints(self, n: int) -> list[int]:
        return list(struct.unpack(f"<{n}i", self.take(4 * n)))

    def uints(self, n: int) -> list[int]:
        return list(struct.unpack(f"<{n}I", self.take(4 * n)))
