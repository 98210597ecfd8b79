"""ANeuralNetworksMemory: a file mapped with mmap, shared with the caller without copies."""

from __future__ import annotations

import errno
import mmap

from ..nnapi.codes import ResultCode
from ..nnapi.errors import BadDataError, NnapiError
from ._abi import require
from ._calls import HANDLES, Handled, entry, give

PROT_NONE = 0  # <sys/mman.h>; the mmap module does not name it
_PROTECTIONS = mmap.PROT_READ | mmap.PROT_WRITE


class Memory(Handled):
    KIND = "ANeuralNetworksMemory"

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


def memory_of(handle: int, argument: str = "memory") -> Memory:
    return HANDLES.get(handle, Memory, argument)


@entry
def memory_create_from_fd(size: int, protect: int, fd: int, offset: int, out: int) -> None:
    require(memory=out)
    give(out, "memory", Memory(size, protect, fd, offset))


@entry
def memory_create_from_ahardware_buffer(ahwb: int, out: int) -> None:
    require(ahwb=ahwb, memory=out)
    raise NnapiError("there is no AHardwareBuffer on Linux", ResultCode.UNMAPPABLE)


@entry
def memory_free(handle: int) -> None:
    memory = HANDLES.remove(handle, Memory)
    if memory is not None:
        memory.close()
