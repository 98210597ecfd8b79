"""Layer 1: NNAPI's vocabulary, per-operation signatures and the Model."""

from .codes import (
    DEFAULT_LOOP_TIMEOUT_NS,
    MAXIMUM_LOOP_TIMEOUT_NS,
    DeviceType,
    DurationCode,
    FeatureLevel,
    FuseCode,
    OperandType,
    OperationType,
    PaddingCode,
    PreferenceCode,
    PriorityCode,
    ResultCode,
)
from .errors import (
    BadDataError,
    BadStateError,
    MissedDeadlineError,
    NnapiError,
    OpFailedError,
    OutOfMemoryError,
    OutputInsufficientSizeError,
)
from .model import ChannelQuant, Lifetime, Model, Operand, Operation
from .operand_types import OPERAND_TYPES, QuantKind, type_info

__all__ = [
    "DEFAULT_LOOP_TIMEOUT_NS",
    "MAXIMUM_LOOP_TIMEOUT_NS",
    "BadDataError",
    "BadStateError",
    "ChannelQuant",
    "DeviceType",
    "DurationCode",
    "FeatureLevel",
    "FuseCode",
    "Lifetime",
    "MissedDeadlineError",
    "Model",
    "NnapiError",
    "OPERAND_TYPES",
    "OpFailedError",
    "OutOfMemoryError",
    "Operand",
    "OperandType",
    "Operation",
    "OperationType",
    "OutputInsufficientSizeError",
    "PaddingCode",
    "PreferenceCode",
    "PriorityCode",
    "QuantKind",
    "ResultCode",
    "type_info",
]
