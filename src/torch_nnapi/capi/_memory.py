"""ANeuralNetworksMemory: a file mapped with mmap, shared with the caller without copies, or
(API 30) memory made from a descriptor for given execution roles.

Memory made from a descriptor (``DeviceMemory``) is the host's "device native memory": plain
memory of the size its roles' operand needs, bound whole (offset and length 0) to the inputs
and outputs its descriptor names, readable only once an execution or a copy has filled it.
"""

from __future__ import annotations

import errno
import mmap
import threading
from typing import Any

from ..nnapi.codes import ResultCode
from ..nnapi.errors import BadDataError, NnapiError
from ..nnapi.model import Operand, element_count
from ._abi import require
from ._calls import HANDLES, Handled, entry, give

PROT_NONE = 0  # <sys/mman.h>; the mmap module does not name it
_PROTECTIONS = mmap.PROT_READ | mmap.PROT_WRITE


class Memory(Handled):
    """What every memory object offers: a region to bind, and its logical size for copies."""

    KIND = "ANeuralNetworksMemory"
    size = 0

    def region(self, offset: int, length: int, *, write: bool) -> memoryview:
        raise NotImplementedError

    def close(self) -> None:
        pass


class MappedMemory(Memory):
    """A file descriptor's pages, mapped (createFromFd)."""

    def __init__(self, size: int, protect: int, fd: int, offset: int):
        if size == 0:
            raise BadDataError("size is 0")
        if fd < 0:
            raise BadDataError(f"fd {fd} is not a file descriptor")
        if protect & ~_PROTECTIONS:
            raise BadDataError(f"protect {protect:#x} is not PROT_NONE or a combination of"
                               " PROT_READ and PROT_WRITE")
        if offset % mmap.ALLOCATIONGRANULARITY:
            raise BadDataError(f"offset {offset} is not a multiple of the page size"
                               f" {mmap.ALLOCATIONGRANULARITY}")
        self.size = size
        self.readable = bool(protect & mmap.PROT_READ)
        self.writable = bool(protect & mmap.PROT_WRITE)
        self._map: mmap.mmap | None = None
        if protect != PROT_NONE:  # PROT_NONE memory maps nothing anyone could touch
            try:  # mmap duplicates fd, as NNAPI says the memory does
                self._map = mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                                      prot=protect | mmap.PROT_READ, offset=offset)
            except (ValueError, OverflowError) as e:  # beyond the end of the file
                raise BadDataError(f"cannot map {size} bytes at offset {offset} of fd {fd}:"
                                   f" {e}") from None
            except OSError as e:  # the file cannot be mapped so (a pipe, a read-only fd...)
                code = ResultCode.BAD_DATA if e.errno == errno.EBADF else ResultCode.UNMAPPABLE
                raise NnapiError(f"cannot map fd {fd}: {e.strerror}", code) from None

    def region(self, offset: int, length: int, *, write: bool) -> memoryview:
        """``length`` bytes at ``offset``; BAD_DATA when outside the memory or not permitted."""
        if offset + length > self.size:
            raise BadDataError(f"offset {offset} + length {length} exceeds the memory's size"
                               f" {self.size}")
        if not (self.writable if write else self.readable):
            raise BadDataError(f"the memory was mapped without PROT_{'WRITE' if write else 'READ'}")
        region = memoryview(self._map)[offset:offset + length]
        return region if write else region.toreadonly()

    def close(self) -> None:
        try:
            if self._map is not None:
                self._map.close()
        except BufferError:
            pass  # still referenced by a model or execution: unmapped when they let go


# A role: (the compilation, "input" or "output", the index among the model's inputs/outputs).
Role = tuple[Any, str, int]


class DeviceMemory(Memory):
    """Memory from a descriptor: its operand's type and fully known dimensions, the roles it
    may play, and whether it holds data yet."""

    def __init__(self, operand: Operand, dimensions: tuple[int, ...], roles: frozenset[Role]):
        self.operand = operand
        self.dimensions = dimensions
        self.roles = roles
        shape = () if operand.is_scalar else dimensions
        self.size = element_count(shape) * operand.info.element_size
        self.buffer = bytearray(self.size)
        self.initialized = False
        self.lock = threading.Lock()

    def region(self, offset: int, length: int, *, write: bool) -> memoryview:
        raise BadDataError("memory created from a descriptor is bound to executions only, whole"
                           " (setInputFromMemory/setOutputFromMemory with offset and length 0)")

    def bind(self, compilation: Any, direction: str, index: int, offset: int,
             length: int) -> memoryview:
        """The whole buffer, for input or output ``index`` of an execution of
        ``compilation``, when the descriptor declared that role."""
        if offset or length:
            raise BadDataError("memory created from a descriptor is bound whole: offset and"
                               f" length must be 0, got {offset} and {length}")
        if (compilation, direction, index) not in self.roles:
            raise BadDataError(f"the memory's descriptor has no {direction} role for {direction}"
                               f" {index} of this compilation")
        return memoryview(self.buffer)

    def readable(self, what: str) -> None:
        if not self.initialized:
            raise BadDataError(f"{what} has no data yet: memory created from a descriptor is"
                               " written by an execution or ANeuralNetworksMemory_copy first")


def memory_of(handle: int, argument: str = "memory") -> Memory:
    return HANDLES.get(handle, Memory, argument)


@entry
def memory_create_from_fd(size: int, protect: int, fd: int, offset: int, out: int) -> None:
    require(memory=out)
    give(out, "memory", MappedMemory(size, protect, fd, offset))


@entry
def memory_create_from_ahardware_buffer(ahwb: int, out: int) -> None:
    require(ahwb=ahwb, memory=out)
    raise NnapiError("there is no AHardwareBuffer on Linux", ResultCode.UNMAPPABLE)


@entry
def memory_free(handle: int) -> None:
    memory = HANDLES.remove(handle, Memory)
    if isinstance(memory, Memory):
        memory.close()


@entry
def memory_copy(src_handle: int, dst_handle: int) -> None:
    """Copies between memories of the same logical size; memories from descriptors must agree
    on dimensions, and a source from a descriptor must hold data."""
    src, dst = memory_of(src_handle, "src"), memory_of(dst_handle, "dst")
    if isinstance(src, DeviceMemory):
        src.readable("src")
    if isinstance(src, DeviceMemory) and isinstance(dst, DeviceMemory) \
            and src.dimensions != dst.dimensions:
        raise BadDataError(f"src has dimensions {list(src.dimensions)}, dst"
                           f" {list(dst.dimensions)}")
    if src.size != dst.size:
        raise BadDataError(f"src holds {src.size} bytes, dst {dst.size}")
    data = bytes(_readable_bytes(src))
    if isinstance(dst, DeviceMemory):
        with dst.lock:
            dst.buffer[:] = data
            dst.initialized = True
    else:
        dst.region(0, dst.size, write=True)[:] = data


def _readable_bytes(memory: Memory) -> memoryview:
    if isinstance(memory, DeviceMemory):
        return memoryview(memory.buffer)
    return memory.region(0, memory.size, write=False)
