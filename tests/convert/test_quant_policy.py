"""What NNAPI runs in 8 bits per feature level, read from the signatures."""

from __future__ import annotations

import pytest

from torch_nnapi.convert import quant_policy as policy
from torch_nnapi.nnapi.codes import OperationType as Op


def test_fixed_output_quantization_comes_from_the_signatures():
    assert policy.fixed_output(Op.LOGISTIC) == (1 / 256, 0)
    assert policy.fixed_output(Op.SOFTMAX) == (1 / 256, 0)
    assert policy.fixed_output(Op.TANH) == (1 / 128, 128)
    assert policy.fixed_output(Op.CONV_2D) is None


def test_levels_of_8_bit_operations():
    assert policy.quantized_level(Op.CONV_2D) == 1
    assert policy.quantized_level(Op.MEAN) == 2
    assert policy.quantized_level(Op.TANH) == 3
    assert policy.quantized_level(Op.EXP) is None


@pytest.mark.parametrize("kind, level, runs", [
    ("aten::conv2d", 1, True), ("aten::tanh", 2, False), ("aten::tanh", 3, True),
    ("aten::mean", 1, False), ("aten::mean", 2, True), ("aten::hardswish", 3, False),
    ("aten::conv_transpose2d", 2, False), ("aten::conv_transpose2d", 3, True),
])
def test_rule_per_level(kind, level, runs):
    assert (policy.rule_for(kind, level) is not None) == runs


def test_reasons_for_float():
    assert "HARD_SWISH" in policy.float_reason("aten::hardswish_", 3)
    assert policy.float_reason("aten::tanh", 2) == "8-bit TANH needs feature level 3"
    assert policy.float_reason("aten::exp", 3) == "NNAPI has no 8-bit form of this operation"
    assert "per-channel" in policy.float_reason("quantized::conv2d", 3)


def test_every_rule_names_an_operation_with_8_bit_tensors():
    for kind, found in policy.RULES.items():
        assert policy.quantized_level(found.nnapi) is not None, kind
        if found.role == "fixed":
            assert policy.fixed_output(found.nnapi) is not None, kind


def test_signed_8_bits_from_level_4():
    signed = policy.OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    assert policy.quantized_activation_type(4) == signed
    assert policy.quantized_activation_type(3) == policy.UINT8
    assert policy.quantized_level(Op.CONV_2D, signed) == 4
    with pytest.raises(ValueError, match=r"target_level=5 is not a feature level NNAPI"
                       r" quantizes for \(1 to 4\)"):
        policy.quantized_activation_type(5)


def test_signed_fixed_outputs_differ_from_unsigned_ones():
    signed = policy.OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    assert policy.fixed_output(Op.LOGISTIC, signed) == (1 / 256, -128)
    assert policy.fixed_output(Op.SOFTMAX, signed) == (1 / 256, -128)
    assert policy.fixed_output(Op.TANH, signed) == (1 / 128, 0)


def test_hard_swish_runs_quantized_from_level_4():
    assert policy.rule_for("aten::hardswish", 3) is None
    found = policy.rule_for("aten::hardswish", 4)
    assert found is not None and found.nnapi == Op.HARD_SWISH
