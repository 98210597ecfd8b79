"""The C side of the bridge: NNAPI's structs as ctypes mirrors, and raw-memory helpers.

The C library hands every argument to Python unchanged, pointers as integers; this module is
where those integers are read and written. The structs are also the source of their
declarations in the generated header, so both sides agree on the layout.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..nnapi.codes import MAX_RANK, ResultCode
from ..nnapi.errors import BadDataError, NnapiError

# A ctypes scalar type (c_int, c_float, c_void_p, ...); their Python values differ in type.
ScalarCType = type["ctypes._SimpleCData[Any]"]
_Value = TypeVar("_Value")
_Struct = TypeVar("_Struct", bound=ctypes.Structure)


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


def read_struct(struct_type: type[_Struct], address: int) -> _Struct:
    """A copy of the C struct at ``address`` (the caller need not keep it alive)."""
    return struct_type.from_buffer_copy(ctypes.string_at(address, ctypes.sizeof(struct_type)))


@dataclass(frozen=True)
class OperandTypeValue:
    """An ANeuralNetworksOperandType read from the caller's memory."""

    type: int
    dimensions: tuple[int, ...]
    scale: float
    zero_point: int


# ANeuralNetworksOperandType as struct.unpack reads it, the pointer as an integer: one read
# of the caller's memory instead of a ctypes struct and an element-by-element pointer walk
# (PyTorch's wrapper passes a type with every setInput of every execution).
# Native alignment, field by field: type, dimensionCount, dimensions, scale, zeroPoint.
_OPERAND_TYPE_LAYOUT = struct.Struct("iIPfi")
if _OPERAND_TYPE_LAYOUT.size != ctypes.sizeof(OperandTypeStruct):
    raise ImportError("ANeuralNetworksOperandType's layout differs from OperandTypeStruct's")


def read_operand_type(address: int, argument: str = "type") -> OperandTypeValue:
    require(**{argument: address})
    code, count, pointer, scale, zero_point = _OPERAND_TYPE_LAYOUT.unpack(
        ctypes.string_at(address, _OPERAND_TYPE_LAYOUT.size))
    if count > MAX_RANK:  # the C library refuses these before calling here
        raise BadDataError(f"{argument}: dimensionCount {count} is more than"
                           f" the {MAX_RANK} any NNAPI operation takes")
    if (count == 0) == bool(pointer):
        raise BadDataError(f"{argument}: dimensionCount is {count} but dimensions"
                           f" is {'not ' if pointer else ''}NULL")
    dims = tuple((ctypes.c_uint32 * count).from_address(pointer)) if count else ()
    return OperandTypeValue(code, dims, scale, zero_point)


def read_array(ctype: type[ctypes._SimpleCData[_Value]], address: int,
               count: int) -> list[_Value]:
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


def store(ctype: type[ctypes._SimpleCData[_Value]], address: int, value: _Value) -> None:
    """Writes an output argument: ``*(ctype *)address = value``."""
    ctype.from_address(address).value = value


def store_array(ctype: type[ctypes._SimpleCData[_Value]], address: int,
                values: Iterable[_Value]) -> None:
    listed: list[ctypes._SimpleCData[_Value] | _Value] = list(values)
    if listed:
        (ctype * len(listed)).from_address(address)[:] = listed
