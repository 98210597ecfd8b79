"""The C side of the bridge: NNAPI's structs as ctypes mirrors, and raw-memory helpers.

The C library hands every argument to Python unchanged, pointers as integers; this module is
where those integers are read and written. The structs are also the source of their
declarations in the generated header, so both sides agree on the layout.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

from ..nnapi.codes import MAX_RANK, ResultCode
from ..nnapi.errors import BadDataError, NnapiError


class OperandTypeStruct(ctypes.Structure):
    """ANeuralNetworksOperandType."""

    _c_name_ = "ANeuralNetworksOperandType"
    _fields_ = [
        ("type", ctypes.c_int32),
        ("dimensionCount", ctypes.c_uint32),
        ("dimensions", ctypes.POINTER(ctypes.c_uint32)),
        ("scale", ctypes.c_float),
        ("zeroPoint", ctypes.c_int32),
    ]


class SymmPerChannelQuantParamsStruct(ctypes.Structure):
    """ANeuralNetworksSymmPerChannelQuantParams."""

    _c_name_ = "ANeuralNetworksSymmPerChannelQuantParams"
    _fields_ = [
        ("channelDim", ctypes.c_uint32),
        ("scaleCount", ctypes.c_uint32),
        ("scales", ctypes.POINTER(ctypes.c_float)),
    ]


STRUCTS = (OperandTypeStruct, SymmPerChannelQuantParamsStruct)


class UnexpectedNullError(NnapiError):
    """A required pointer argument is NULL."""

    code = ResultCode.UNEXPECTED_NULL


def require(**pointers: int) -> None:
    """Raises UNEXPECTED_NULL naming the first of ``pointers`` that is NULL."""
    for name, address in pointers.items():
        if not address:
            raise UnexpectedNullError(f"{name} is NULL")


def read_struct(struct_type: type, address: int):
    """A copy of the C struct at ``address`` (the caller need not keep it alive)."""
    return struct_type.from_buffer_copy(ctypes.string_at(address, ctypes.sizeof(struct_type)))


@dataclass(frozen=True)
class OperandTypeValue:
    """An ANeuralNetworksOperandType read from the caller's memory."""

    type: int
    dimensions: tuple[int, ...]
    scale: float
    zero_point: int


def read_operand_type(address: int, argument: str = "type") -> OperandTypeValue:
    require(**{argument: address})
    struct = read_struct(OperandTypeStruct, address)
    has_pointer = bool(ctypes.cast(struct.dimensions, ctypes.c_void_p).value)
    if struct.dimensionCount > MAX_RANK:  # the C library refuses these before calling here
        raise BadDataError(f"{argument}: dimensionCount {struct.dimensionCount} is more than"
                           f" the {MAX_RANK} any NNAPI operation takes")
    if (struct.dimensionCount == 0) == has_pointer:
        raise BadDataError(f"{argument}: dimensionCount is {struct.dimensionCount} but dimensions"
                           f" is {'not ' if has_pointer else ''}NULL")
    dims = tuple(struct.dimensions[i] for i in range(struct.dimensionCount))
    return OperandTypeValue(struct.type, dims, struct.scale, struct.zeroPoint)


def read_array(ctype, address: int, count: int) -> list:
    """``count`` values of ``ctype`` at ``address`` (NULL is fine when ``count`` is 0)."""
    if count == 0:
        return []
    return list((ctype * count).from_address(address))


def read_string(address: int) -> str:
    return ctypes.string_at(address).decode("utf-8", errors="replace")


def read_bytes(address: int, length: int) -> bytes:
    check_length(length)
    return ctypes.string_at(address, length) if length else b""


def check_length(length: int, argument: str = "length") -> None:
    """A size_t length no buffer can have (2^63 and above: more than the address space)."""
    if length > sys.maxsize:
        raise BadDataError(f"{argument} {length} is larger than any buffer can be")


def view(address: int, length: int, writable: bool = False) -> memoryview:
    """A memoryview of ``length`` bytes of the caller's memory at ``address`` (no copy)."""
    check_length(length)
    buffer = (ctypes.c_uint8 * length).from_address(address)
    result = memoryview(buffer).cast("B")
    return result if writable else result.toreadonly()


def store(ctype, address: int, value) -> None:
    """Writes an output argument: ``*(ctype *)address = value``."""
    ctype.from_address(address).value = value


def store_array(ctype, address: int, values) -> None:
    values = list(values)
    if values:
        (ctype * len(values)).from_address(address)[:] = values
