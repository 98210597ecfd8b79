"""What each NNAPI operand type is made of: element dtype, scalar or tensor, quantization kind."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from .codes import FeatureLevel, OperandType


class QuantKind(Enum):
    NONE = "none"
    ASYMMETRIC = "asymmetric"  # real = scale * (q - zero_point)
    SYMMETRIC = "symmetric"  # real = scale * q, zero_point must be 0
    PER_CHANNEL = "per-channel"  # real = scales[channel] * q


@dataclass(frozen=True)
class OperandTypeInfo:
    type: OperandType
    dtype: np.dtype[Any]  # one dtype per operand type, of whichever scalar kind
    is_scalar: bool
    quant: QuantKind
    feature_level: FeatureLevel
    short_name: str

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def is_tensor(self) -> bool:
        return not self.is_scalar

    @property
    def is_quantized(self) -> bool:
        return self.quant is not QuantKind.NONE

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_model(self) -> bool:
        """A reference to another model (MODEL): no dimensions, no data of its own."""
        return self.type == OperandType.MODEL


def _info(t: OperandType, dtype: str, scalar: bool, quant: QuantKind, level: FeatureLevel,
          short: str) -> OperandTypeInfo:
    return OperandTypeInfo(t, np.dtype(dtype), scalar, quant, level, short)


_T = OperandType
_L1, _L3, _L4 = FeatureLevel.ANDROID_8_1, FeatureLevel.ANDROID_10, FeatureLevel.ANDROID_11
_N, _A, _S, _P = QuantKind.NONE, QuantKind.ASYMMETRIC, QuantKind.SYMMETRIC, QuantKind.PER_CHANNEL

OPERAND_TYPES: dict[OperandType, OperandTypeInfo] = {
    i.type: i
    for i in (
        _info(_T.FLOAT32, "<f4", True, _N, _L1, "f32"),
        _info(_T.INT32, "<i4", True, _N, _L1, "i32"),
        _info(_T.UINT32, "<u4", True, _N, _L1, "u32"),
        _info(_T.BOOL, "u1", True, _N, _L3, "bool"),
        _info(_T.FLOAT16, "<f2", True, _N, _L3, "f16"),
        _info(_T.TENSOR_FLOAT32, "<f4", False, _N, _L1, "tensor_f32"),
        _info(_T.TENSOR_INT32, "<i4", False, _N, _L1, "tensor_i32"),
        _info(_T.TENSOR_QUANT8_ASYMM, "u1", False, _A, _L1, "tensor_q8"),
        _info(_T.TENSOR_QUANT16_SYMM, "<i2", False, _S, _L3, "tensor_q16s"),
        _info(_T.TENSOR_FLOAT16, "<f2", False, _N, _L3, "tensor_f16"),
        _info(_T.TENSOR_BOOL8, "u1", False, _N, _L3, "tensor_bool8"),
        _info(_T.TENSOR_QUANT8_SYMM_PER_CHANNEL, "i1", False, _P, _L3, "tensor_q8pc"),
        _info(_T.TENSOR_QUANT16_ASYMM, "<u2", False, _A, _L3, "tensor_q16a"),
        _info(_T.TENSOR_QUANT8_SYMM, "i1", False, _S, _L3, "tensor_q8s"),
        _info(_T.TENSOR_QUANT8_ASYMM_SIGNED, "i1", False, _A, _L4, "tensor_q8_signed"),
        # A model reference holds a Model, not elements; "scalar" as it has no dimensions.
        _info(_T.MODEL, "V0", True, _N, _L4, "model"),
    )
}

SHORT_NAMES: dict[str, OperandType] = {i.short_name: t for t, i in OPERAND_TYPES.items()}


def type_info(operand_type: OperandType | int) -> OperandTypeInfo:
    """Looks up an operand type, raising a ValueError that names an unknown code. Known codes
    (an OperandType or its int, which hash alike) take one dict lookup: every operand's
    ``info`` comes here, on each execution's inputs too."""
    try:
        info = OPERAND_TYPES.get(operand_type)  # type: ignore[arg-type]
        if info is not None:
            return info
        return OPERAND_TYPES[OperandType(operand_type)]
    except (TypeError, ValueError):  # TypeError: unhashable, never a code
        raise ValueError(f"unknown NNAPI operand type code {int(operand_type)}") from None


def zero_point_range(operand_type: OperandType) -> tuple[int, int]:
    """The values a zero point may take for this type (0..0 where it must be zero)."""
    info = type_info(operand_type)
    if info.quant is QuantKind.ASYMMETRIC:
        limits = np.iinfo(info.dtype)
        return int(limits.min), int(limits.max)
    return 0, 0
