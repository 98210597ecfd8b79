"""What NNAPI runs quantized, per PyTorch op and feature level, and why the rest is float.

One table, two readers: the NNAPI quantizer (``quantizer.py``) annotates exactly the ops it
lists for the target level, and ``check`` explains each float island of a converted model
with :func:`float_reason`. The feature level at which an NNAPI operation takes 8-bit tensors,
and the output quantization NNAPI fixes (LOGISTIC, SOFTMAX, TANH), are read from the
operation signatures, not restated here. No torch import: ``check`` reads this without
torchao.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..nnapi.codes import FeatureLevel, OperationType
from ..nnapi.codes import OperandType as OperandType  # exported: its functions take it
from ..nnapi.signatures import SIGNATURES, FixedQuantRule

UINT8 = OperandType.TENSOR_QUANT8_ASYMM
# The NNAPI operand type of each PyTorch 8-bit activation dtype.
ACTIVATION_TYPES = {"quint8": UINT8, "qint8": OperandType.TENSOR_QUANT8_ASYMM_SIGNED}
# The level that brought signed 8-bit activations (TENSOR_QUANT8_ASYMM_SIGNED, Android 11).
SIGNED_LEVEL = 4


@dataclass(frozen=True)
class QuantRule:
    """How a PyTorch op runs quantized.

    ``role``: "conv" and "linear" (8-bit weights, int32 bias), "binary" (two activations,
    NNAPI requantizes each), "cat" (CONCATENATION), "same" (output quantized like the input,
    as NNAPI requires for pools, clamps and data movement), "fixed" (output quantization
    fixed by NNAPI), "unary" (one activation in, the output observed on its own).
    ``nnapi``: the NNAPI operation that runs it."""

    role: str
    nnapi: OperationType


def _rules() -> dict[str, QuantRule]:
    table: dict[str, QuantRule] = {}

    def add(role: str, nnapi: OperationType, *kinds: str) -> None:
        for kind in kinds:
            table[kind] = QuantRule(role, nnapi)

    Op = OperationType
    add("conv", Op.CONV_2D, "aten::conv2d")
    add("conv", Op.TRANSPOSE_CONV_2D, "aten::conv_transpose2d")
    add("linear", Op.FULLY_CONNECTED, "aten::linear")
    add("binary", Op.ADD, "aten::add", "aten::add_")
    add("binary", Op.MUL, "aten::mul", "aten::mul_")
    add("cat", Op.CONCATENATION, "aten::cat", "aten::concat", "aten::concatenate")
    add("same", Op.RELU, "aten::relu", "aten::relu_")
    add("same", Op.RELU6, "aten::relu6", "aten::relu6_", "aten::hardtanh", "aten::hardtanh_")
    add("same", Op.MAX_POOL_2D, "aten::max_pool2d")
    add("same", Op.AVERAGE_POOL_2D, "aten::avg_pool2d", "aten::adaptive_avg_pool2d")
    add("same", Op.MEAN, "aten::mean")
    add("same", Op.RESHAPE, "aten::flatten", "aten::view", "aten::reshape",
        "aten::_unsafe_view", "aten::squeeze", "aten::unsqueeze", "aten::contiguous",
        "aten::clone", "aten::dropout", "aten::dropout_", "aten::permute", "aten::transpose")
    add("same", Op.PAD, "aten::pad", "aten::constant_pad_nd")
    add("same", Op.RESIZE_NEAREST_NEIGHBOR, "aten::upsample_nearest2d")
    add("fixed", Op.LOGISTIC, "aten::sigmoid", "aten::sigmoid_")
    add("fixed", Op.SOFTMAX, "aten::softmax", "aten::_softmax")
    add("fixed", Op.TANH, "aten::tanh", "aten::tanh_")
    add("unary", Op.HARD_SWISH, "aten::hardswish", "aten::hardswish_")
    return table


RULES: dict[str, QuantRule] = _rules()

# Activations NNAPI fuses into the operation before them (its fuse code).
FUSED_ACTIVATIONS = ("aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_",
                     "aten::hardtanh", "aten::hardtanh_")

# Why ops without a rule stay float (a default covers the others).
_FLOAT_REASONS = {
    "aten::hardswish": "NNAPI has no quantized HARD_SWISH before feature level 4 (Android 11)",
    "aten::hardswish_": "NNAPI has no quantized HARD_SWISH before feature level 4 (Android 11)",
    "quantized::hardswish": "NNAPI has no quantized HARD_SWISH before feature level 4"
                            " (Android 11)",
    "aten::hardsigmoid": "NNAPI has no hard sigmoid: it is built from float arithmetic",
    "aten::hardsigmoid_": "NNAPI has no hard sigmoid: it is built from float arithmetic",
    "quantized::hardsigmoid": "NNAPI has no hard sigmoid: it is built from float arithmetic",
    "aten::batch_norm": "a batch norm not after a convolution is float arithmetic in NNAPI",
    "quantized::batch_norm2d": "a batch norm not after a convolution is float arithmetic in"
                               " NNAPI",
    "aten::silu": "NNAPI has no SILU: it is built from float LOGISTIC and MUL",
    "aten::gelu": "NNAPI has no GELU: it is built from float arithmetic",
    "aten::layer_norm": "NNAPI has no quantized layer normalization",
    "aten::conv1d": "the converter runs quantized convolutions in 2-D only",
    "aten::matmul": "NNAPI multiplies two activations only in float",
    "aten::bmm": "NNAPI multiplies two activations only in float",
    "quantized::conv2d": "per-channel weights: PyTorch's serialized NNAPI format cannot carry"
                         " per-channel scales",
    "quantized::linear": "per-channel weights: PyTorch's serialized NNAPI format cannot carry"
                         " per-channel scales",
}
DOWNSTREAM_REASON = ("after a float operation, feature levels 1 and 2 cannot quantize again"
                     " (NNAPI's QUANTIZE needs level 3)")


def quantized_level(op: OperationType, operand_type: OperandType = UINT8) -> int | None:
    """The feature level since which ``op`` takes ``operand_type`` tensors (None: never)."""
    signature = SIGNATURES.get(op)
    if signature is None:
        return None
    levels = [level for level, types in signature.operand_types_by_level().items()
              if operand_type in types]
    return min(levels) if levels else None


def per_channel_level() -> int:
    """The feature level since which convolutions take per-channel symmetric int8 weights
    (TENSOR_QUANT8_SYMM_PER_CHANNEL), read from CONV_2D's signature."""
    per_channel = OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
    levels = [max(combo.level, int(SIGNATURES[OperationType.CONV_2D].level))
              for combo in SIGNATURES[OperationType.CONV_2D].combos
              if per_channel in combo.bindings.values()]
    if not levels:  # the signatures list it; a version without would be a bug
        raise ValueError("CONV_2D's signature takes no per-channel weights")
    return min(levels)


def fixed_output(op: OperationType, operand_type: OperandType = UINT8
                 ) -> tuple[float, int] | None:
    """(scale, zero point) NNAPI fixes for ``op``'s ``operand_type`` output, if it does."""
    signature = SIGNATURES.get(op)
    for r in signature.rules if signature is not None else ():
        if isinstance(r, FixedQuantRule) and r.operand_type == operand_type:
            return r.scale, r.zero_point
    return None


def activation_type(level: int) -> OperandType:
    """The 8-bit activation type for a target level: uint8 below level 4, int8 from it."""
    if level >= SIGNED_LEVEL:
        signed: OperandType | None = getattr(OperandType, "TENSOR_QUANT8_ASYMM_SIGNED", None)
        if signed is None or quantized_level(OperationType.CONV_2D, signed) is None:
            raise ValueError(f"target_level={level} quantizes to signed 8 bits"
                             " (TENSOR_QUANT8_ASYMM_SIGNED, Android 11), which this version"
                             " of torch-nnapi cannot run yet; use target_level=3")
        return signed
    return UINT8


def quantized_activation_type(level: int) -> OperandType:
    """The activation type a model quantized for ``level`` gets (uint8, or int8 from level
    4); a ValueError naming the levels there are for any other number."""
    levels = [int(fl) for fl in FeatureLevel]
    if level not in levels:
        raise ValueError(f"target_level={level} is not a feature level NNAPI quantizes for"
                         f" ({min(levels)} to {max(levels)})")
    return activation_type(level)


def rule_for(kind: str, level: int) -> QuantRule | None:
    """The rule of ``kind`` if NNAPI of ``level`` runs it quantized, else None."""
    found = RULES.get(kind)
    if found is None:
        return None
    needed = quantized_level(found.nnapi, activation_type(level))
    return found if needed is not None and needed <= level else None


def float_reason(kind: str, level: int) -> str:
    """Why ``kind`` runs in float on NNAPI of ``level``."""
    if kind in _FLOAT_REASONS:
        return _FLOAT_REASONS[kind]
    found = RULES.get(kind)
    if found is not None:
        needed = quantized_level(found.nnapi, activation_type(level))
        if needed is None:
            return f"NNAPI has no 8-bit {found.nnapi.name}"
        if needed > level:
            return f"8-bit {found.nnapi.name} needs feature level {needed}"
        return "the quantizer left it in float"
    return "NNAPI has no 8-bit form of this operation"
