"""The bridge's calling convention: handles for C callers, and result codes instead of raising.

A C caller holds every NNAPI object as an opaque pointer. Here that pointer is just a key into
one table of live objects, never an address: a freed, foreign or wrong-kind handle is found
missing and answered with ANEURALNETWORKS_BAD_DATA instead of being dereferenced.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import logging
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ..nnapi.codes import ResultCode
from ..nnapi.errors import BadDataError, NnapiError
from ._abi import require, store
from .api import FUNCTIONS

log = logging.getLogger("torch_nnapi.capi")

_C_NAMES = {f.bridge_name: f.name for f in FUNCTIONS}
_last_error = threading.local()



class Handled:
    """Base of the objects C callers hold; ``KIND`` names their C type in messages."""

    KIND = "object"


T = TypeVar("T", bound=Handled)
P = ParamSpec("P")


class HandleTable:
    """Live objects by handle. Handles look like aligned pointers and are never reused."""

    def __init__(self) -> None:
        self._objects: dict[int, Handled] = {}
        self._numbers = itertools.count(0x7E5000000000, 0x40)

    def add(self, obj: Handled) -> int:
        handle = next(self._numbers)
        self._objects[handle] = obj
        return handle

    def get(self, handle: int, kind: type[T], argument: str) -> T:
        obj = self._objects.get(handle)
        if type(obj) is kind:  # the common case, checked first: a call makes several gets
            return obj
        require(**{argument: handle})
        if not isinstance(obj, kind):
            raise BadDataError(f"{argument} ({handle:#x}) is not a live {kind.KIND}")
        return obj

    def remove(self, handle: int, kind: type[T]) -> T | None:
        """Forgets a handle; unknown or wrong-kind handles are left alone (free never fails)."""
        obj = self._objects.get(handle)
        if isinstance(obj, kind) and self._objects.pop(handle, None) is obj:
            return obj
        return None


HANDLES = HandleTable()


def give(out_address: int, argument: str, obj: Handled) -> None:
    """Registers ``obj`` and writes its handle to the caller's out-argument."""
    require(**{argument: out_address})
    store(ctypes.c_void_p, out_address, HANDLES.add(obj))


def last_error() -> str:
    """The message of the last failed call on this thread (for diagnostics, like errno)."""
    return getattr(_last_error, "message", "")


def refuse_call(c_name: str, message: str) -> int:
    """A call the C library refused before reading its arguments (e.g. a dimensionCount no
    operand can have): logged and recorded like any failed call; returns BAD_DATA."""
    code = ResultCode.BAD_DATA
    log.warning("%s: %s: %s", c_name, code.name, message)
    _last_error.message = f"{c_name}: {code.name}: {message}"
    return int(code)


def entry(function: Callable[P, int | None]) -> Callable[P, int]:
    """Makes ``function`` a bridge entry: it returns a result code and never raises.

    ``function`` returns None (success) or a code; NnapiError becomes its code, any other
    exception OP_FAILED. Failures are logged with the C function's name.
    """
    c_name = _C_NAMES[function.__name__]
    no_error = int(ResultCode.NO_ERROR)

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            code = function(*args, **kwargs)
            return no_error if code is None else int(code)
        except NnapiError as e:
            code, message = ResultCode(e.code), str(e)
            expected = code == ResultCode.OUTPUT_INSUFFICIENT_SIZE  # a step of the protocol
            log.log(logging.INFO if expected else logging.WARNING, "%s: %s: %s", c_name,
                    code.name, message)
        except Exception as e:  # noqa: BLE001 - a bridge bug must not reach the C caller
            code, message = ResultCode.OP_FAILED, f"internal error: {type(e).__name__}: {e}"
            log.exception("%s: %s", c_name, message)
        _last_error.message = f"{c_name}: {ResultCode(code).name}: {message}"
        return int(code)

    return call
