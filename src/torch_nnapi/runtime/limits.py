"""What a tensor may need before anything is allocated for it.

NNAPI dimensions are uint32, and a host cannot hold a tensor larger than its memory: such
sizes are refused with BAD_DATA or OUT_OF_MEMORY when the shapes are known (at compilation
when they are static), instead of failing inside NumPy with a MemoryError.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import cache

import numpy as np

from ..nnapi.errors import BadDataError, OutOfMemoryError

MAX_DIMENSION = 2**32 - 1  # dimensions are uint32 in NeuralNetworks.h


@cache
def physical_memory() -> int:
    """The machine's memory in bytes (a generous 2**48 when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 2**48


def check_tensor_sizes(shapes: Sequence[Sequence[int]], dtypes: Sequence[np.dtype],
                       what: str) -> None:
    """Raises BAD_DATA for a dimension NNAPI cannot express and OUT_OF_MEMORY when the
    tensors together need more bytes than the machine has."""
    total = 0
    for pos, (shape, dtype) in enumerate(zip(shapes, dtypes, strict=True)):
        if any(d > MAX_DIMENSION for d in shape):
            raise BadDataError(f"{what} {pos} would have dimensions {list(shape)}, beyond"
                               f" NNAPI's uint32 limit")
        total += math.prod(shape) * np.dtype(dtype).itemsize
    if total > physical_memory():
        raise OutOfMemoryError(f"{what}s would need {total / 2**30:.3g} GiB, more than this"
                               f" machine's {physical_memory() / 2**30:.3g} GiB")


def is_allocation_failure(error: BaseException) -> bool:
    """A failure to allocate: MemoryError, or NumPy refusing an array larger than memory."""
    return isinstance(error, MemoryError) or (
        isinstance(error, ValueError) and "array is too big" in str(error))
