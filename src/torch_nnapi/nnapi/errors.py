"""Errors carry the NNAPI result code a C caller would get, so every layer reports alike."""

from __future__ import annotations

from .codes import ResultCode


class NnapiError(Exception):
    """Base of all torch-nnapi NNAPI errors; ``code`` is the matching ANEURALNETWORKS_* code."""

    code: ResultCode = ResultCode.OP_FAILED

    def __init__(self, message: str, code: ResultCode | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class BadDataError(NnapiError, ValueError):
    """Invalid model, operand, argument or input data."""

    code = ResultCode.BAD_DATA


class BadStateError(NnapiError, RuntimeError):
    """A call made in the wrong state (e.g. modifying a finished model)."""

    code = ResultCode.BAD_STATE


class OpFailedError(NnapiError, RuntimeError):
    """An operation could not be executed with the data it was given."""

    code = ResultCode.OP_FAILED


class MissedDeadlineError(NnapiError):
    """An execution (or one of its WHILE loops) ran past its timeout and was stopped."""

    code = ResultCode.MISSED_DEADLINE_TRANSIENT


class OutOfMemoryError(NnapiError, MemoryError):
    """A tensor would need more memory than the machine has."""

    code = ResultCode.OUT_OF_MEMORY


class OutputInsufficientSizeError(NnapiError):
    """An output buffer is too small for the actual output; the real dimensions are known."""

    code = ResultCode.OUTPUT_INSUFFICIENT_SIZE

    def __init__(self, message: str, output_dimensions: dict[int, tuple[int, ...]]):
        super().__init__(message)
        self.output_dimensions = output_dimensions


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and the noun agreeing with it ("1 node", "2 nodes", "0 operations"): every
    layer's messages write counts through this."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
