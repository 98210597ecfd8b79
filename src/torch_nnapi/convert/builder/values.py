"""What the converter knows about a PyTorch tensor that lives in the NNAPI model."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

from ...nnapi.codes import OperandType
from . import layout as lay
from .symbolic import SymInt, hints

if TYPE_CHECKING:
    from typing_extensions import Unpack

# PyTorch dtype name -> the NNAPI tensor type that holds it. NNAPI has no 64-bit integers:
# int64 tensors (indices, argmax results) are carried as int32; the wrapper casts model
# inputs and outputs at the boundary.
NNAPI_TYPE_OF = {
    "float32": OperandType.TENSOR_FLOAT32,
    "float16": OperandType.TENSOR_FLOAT16,
    "int32": OperandType.TENSOR_INT32,
    "int64": OperandType.TENSOR_INT32,
    "bool": OperandType.TENSOR_BOOL8,
    "quint8": OperandType.TENSOR_QUANT8_ASYMM,
    "qint8": OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
    "qint32": OperandType.TENSOR_INT32,
    # 8-bit weights with one scale per output channel (constants only, feature level 3).
    "qint8_per_channel": OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
}

FLOAT_DTYPES = ("float32", "float16")
# 8-bit quantized activations: unsigned (every level) and signed (feature level 4, Android 11)
QUANT_DTYPES = ("quint8", "qint8")
# The integers each quantized dtype holds.
QUANT_RANGES = {"quint8": (0, 255), "qint8": (-128, 127)}
# The tensor dtypes PyTorch's NNAPI runtime (torch.classes._nnapi.Compilation) passes in and
# out of a model. It refuses qint8 tensors ("Bad dtype"), so a signed model quantizes its
# float inputs and dequantizes its outputs inside NNAPI.
RUNTIME_DTYPES = ("float32", "quint8", "int32", "int64", "bool")


def dtype_name(dtype: object) -> str:
    """``torch.float32`` -> ``"float32"`` (without importing torch here)."""
    return str(dtype).replace("torch.", "")


@dataclass(frozen=True)
class TensorValue:
    """A tensor of the PyTorch graph, held by NNAPI operand ``operand``.

    ``shape`` is PyTorch's (logical) shape, with :class:`Sym` entries for flexible
    dimensions; ``layout`` says how the NNAPI operand's dimensions are ordered, and
    ``groups`` which runs of that order one NNAPI dimension merges (``()``: none; see
    ``layout.py``), so tensors of any rank live in operands of rank at most 4.
    """

    operand: int
    shape: tuple[SymInt, ...]
    dtype: str
    layout: lay.Layout
    scale: float = 0.0
    zero_point: int = 0
    groups: lay.Groups = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def nnapi_type(self) -> OperandType:
        return NNAPI_TYPE_OF[self.dtype]

    @property
    def nnapi_shape(self) -> tuple[SymInt, ...]:
        """The NNAPI operand's dimensions (() for a 0-D tensor, as NNAPI reductions give)."""
        if self.groups:
            return lay.merged_shape(self.layout, self.groups, self.shape)
        return lay.apply(self.layout, self.shape)

    @property
    def is_grouped(self) -> bool:
        """True when an NNAPI dimension merges several PyTorch dimensions."""
        return bool(self.groups)

    def nnapi_axis(self, torch_dim: int) -> int:
        """The NNAPI axis holding PyTorch dimension ``torch_dim``, which must not be merged
        with another dimension of size above 1."""
        position = lay.axis(self.layout, torch_dim)
        for axis, run in enumerate(lay.group_runs(self.groups, self.rank)):
            if position in run:
                others = [self.shape[self.layout[p]] for p in run if p != position]
                if any(not (isinstance(d, int) and d == 1) for d in others):
                    raise ValueError(f"dimension {torch_dim} is merged with others in"
                                     f" NNAPI axis {axis}")
                return axis
        raise ValueError(f"dimension {torch_dim} is out of range for rank {self.rank}")

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    @property
    def is_quantized(self) -> bool:
        return self.dtype in QUANT_DTYPES

    @property
    def contiguous(self) -> bool:
        return lay.is_identity(self.layout)

    @property
    def example_shape(self) -> tuple[int, ...]:
        return hints(self.shape)

    def with_(self, **changes: Unpack[TensorFields]) -> TensorValue:
        return replace(self, **changes)


class TensorFields(TypedDict, total=False):
    """The fields :meth:`TensorValue.with_` may change."""

    operand: int
    shape: tuple[SymInt, ...]
    dtype: str
    layout: lay.Layout
    scale: float
    zero_point: int
    groups: lay.Groups
