"""Layer 1: NNAPI's vocabulary, per-operation signatures and the Model."""

from .codes import (
    DeviceType,
    DurationCode,
    FeatureLevel,
    FuseCode,
    OperandType,
    OperationType,
    PaddingCode,
    PreferenceCode,
    ResultCode,
)
from .errors import (
    BadDataError,
    BadStateError,
    NnapiError,
    OpFailedError,
    OutOfMemoryError,
    OutputInsufficientSizeError,
)
from .model import ChannelQuant, Lifetime, Model, Operand, Operation
from .operand_types import OPERAND_TYPES, QuantKind, type_info

__all__ = [
    "BadDataError",
    "BadStateError",
    "ChannelQuant",
    "DeviceType",
    "DurationCode",
    "FeatureLevel",
    "FuseCode",
    "Lifetime",
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
    "QuantKind",
    "ResultCode",
    "type_info",
]
