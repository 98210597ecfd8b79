"""How a value given for a model input becomes the array an execution reads
(``Execution.set_input``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..nnapi.errors import BadDataError
from ..nnapi.model import Operand, element_count
from .steps import conflicts, fully_known


def input_array(value: Any, operand: Operand, dimensions: Iterable[int] | None,
                where: str) -> np.ndarray:
    """The array an execution reads for model input ``operand`` given ``value`` (an array,
    or a bytes-like buffer with ``dimensions``): of the operand's type (other integer types
    only when every value fits), C-contiguous, its shape checked against the declared one;
    BAD_DATA naming ``where`` otherwise."""
    info = operand.info
    if isinstance(value, (bytes, bytearray, memoryview)):
        dims = tuple(dimensions) if dimensions is not None else operand.dimensions
        shape = () if info.is_scalar else dims
        if not fully_known(shape, info.is_scalar):
            raise BadDataError(f"{where}: dimensions {list(shape)} must be fully specified")
        nbytes = memoryview(value).nbytes
        if nbytes != element_count(shape) * info.element_size:
            raise BadDataError(f"{where}: buffer has {nbytes} bytes, dimensions {list(shape)}"
                               f" need {element_count(shape) * info.element_size}")
        array = np.frombuffer(value, dtype=info.dtype).reshape(shape)
    else:
        array = np.asarray(value)
        if array.dtype != info.dtype:
            if not (np.can_cast(array.dtype, info.dtype, "same_kind")
                    or (array.dtype.kind in "iub" and info.dtype.kind in "iu"
                        and _fits(array, info.dtype))):
                raise BadDataError(f"{where}: got a {array.dtype} array, expected {info.dtype}")
            if info.dtype.kind in "iu" and not _fits(array, info.dtype):
                raise BadDataError(f"{where}: values do not fit {info.dtype}")
            array = array.astype(info.dtype)
        if dimensions is not None and tuple(dimensions) != array.shape:
            raise BadDataError(f"{where}: dimensions {list(dimensions)} do not match the"
                               f" array's shape {list(array.shape)}")
    if info.is_scalar:
        if array.size != 1:
            raise BadDataError(f"{where}: a scalar needs one value, got {array.size}")
        return array.reshape(())
    if conflicts(operand.dimensions, array.shape):
        raise BadDataError(f"{where}: shape {list(array.shape)} does not match the declared"
                           f" {list(operand.dimensions)}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array


def _fits(array: np.ndarray, dtype: np.dtype) -> bool:
    limits = np.iinfo(dtype)
    return array.size == 0 or (array.min() >= limits.min and array.max() <= limits.max)
