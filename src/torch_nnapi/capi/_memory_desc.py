"""ANeuralNetworksMemoryDesc (API 30): describes memory by the execution roles it will play.

Each role names an input or output of a finished compilation; every role's operand must have
the same type and quantization and compatible dimensions. ``createFromDesc`` then makes a
``DeviceMemory`` of those dimensions, which must all be known by then.
"""

from __future__ import annotations

import ctypes
import math

from ..nnapi.errors import BadDataError, BadStateError, NnapiError
from ..nnapi.model import Operand
from ._abi import read_array, require
from ._calls import HANDLES, Handled, entry, give
from ._compilation import CompilationState, compilation_of
from ._memory import DeviceMemory, Role


class MemoryDesc(Handled):
    KIND = "ANeuralNetworksMemoryDesc"

    def __init__(self) -> None:
        self.roles: set[Role] = set()
        self.operand: Operand | None = None  # the first role's operand
        self.dimensions: tuple[int, ...] | None = None  # merged; () is a scalar
        self.finished = False

    def modifiable(self) -> None:
        if self.finished:
            raise BadStateError("the memory descriptor is finished and can no longer change")

    def add_role(self, compilation: CompilationState, direction: str, index: int,
                 frequency: float) -> None:
        self.modifiable()
        model = compilation.ready().model
        indices = model.inputs if direction == "input" else model.outputs
        if not 0 <= index < len(indices):
            raise BadDataError(f"{direction} index {index} is out of range (the model has"
                               f" {len(indices)} {direction}s)")
        if not (0.0 < frequency <= 1.0) or math.isnan(frequency):
            raise BadDataError(f"frequency must be in (0, 1], got {frequency}")
        role = (compilation, direction, index)
        if role in self.roles:
            raise BadDataError(f"{direction} {index} of this compilation is already a role of"
                               " the descriptor")
        operand = model.operands[indices[index]]
        if self.operand is not None:
            first = self.operand
            if (operand.type, operand.scale, operand.zero_point, operand.channel_quant) != \
                    (first.type, first.scale, first.zero_point, first.channel_quant):
                raise BadDataError(f"{direction} {index} is {operand.describe()}, unlike the"
                                   f" descriptor's other roles ({first.describe()})")
        declared = () if operand.is_scalar else operand.dimensions
        dimensions = self._merged(declared, f"{direction} {index}")
        self.operand = self.operand or operand
        self.dimensions = dimensions
        self.roles.add(role)

    def set_dimensions(self, dimensions: tuple[int, ...]) -> None:
        self.modifiable()
        if self.operand is not None and self.operand.is_scalar and dimensions:
            raise BadDataError(f"the descriptor's roles are scalars; dimensions"
                               f" {list(dimensions)} must be empty")
        self.dimensions = self._merged(dimensions, "the dimensions")

    def _merged(self, dimensions: tuple[int, ...], what: str) -> tuple[int, ...]:
        """``dimensions`` (0: unknown, (): unknown rank) combined with the known ones."""
        known = self.dimensions
        if not known:
            return dimensions
        if not dimensions:
            return known
        if len(known) != len(dimensions) or any(
                a and b and a != b for a, b in zip(known, dimensions)):
            raise BadDataError(f"{what} {list(dimensions)} contradict the descriptor's"
                               f" {list(known)}")
        return tuple(a or b for a, b in zip(known, dimensions))

    def finish(self) -> None:
        self.modifiable()
        if not self.roles:
            raise BadDataError("a memory descriptor needs an input or output role first")
        self.finished = True

    def create_memory(self) -> DeviceMemory:
        if not self.finished:
            raise BadStateError("the memory descriptor is not finished")
        operand, dimensions = self.operand, self.dimensions or ()
        assert operand is not None  # finish() required a role
        if not operand.is_scalar and not (dimensions and all(dimensions)):
            raise NnapiError(f"the host cannot allocate memory of unknown dimensions"
                             f" {list(dimensions)}: set them with"
                             " ANeuralNetworksMemoryDesc_setDimensions")
        return DeviceMemory(operand, dimensions, frozenset(self.roles))


def desc_of(handle: int, argument: str = "desc") -> MemoryDesc:
    return HANDLES.get(handle, MemoryDesc, argument)


@entry
def memory_desc_create(out: int) -> None:
    give(out, "desc", MemoryDesc())


@entry
def memory_desc_free(handle: int) -> None:
    HANDLES.remove(handle, MemoryDesc)


@entry
def memory_desc_add_input_role(handle: int, compilation: int, index: int,
                               frequency: float) -> None:
    require(desc=handle, compilation=compilation)
    desc_of(handle).add_role(compilation_of(compilation), "input", index, frequency)


@entry
def memory_desc_add_output_role(handle: int, compilation: int, index: int,
                                frequency: float) -> None:
    require(desc=handle, compilation=compilation)
    desc_of(handle).add_role(compilation_of(compilation), "output", index, frequency)


@entry
def memory_desc_set_dimensions(handle: int, rank: int, dimensions: int) -> None:
    require(desc=handle)
    if rank and not dimensions:
        require(dimensions=dimensions)
    desc_of(handle).set_dimensions(tuple(read_array(ctypes.c_uint32, dimensions, rank)))


@entry
def memory_desc_finish(handle: int) -> None:
    desc_of(handle).finish()


@entry
def memory_create_from_desc(handle: int, out: int) -> None:
    require(desc=handle, memory=out)
    give(out, "memory", desc_of(handle).create_memory())
