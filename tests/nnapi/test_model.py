"""Model building and validation: errors name the operation, the operand and the rule."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    BadDataError,
    BadStateError,
    FeatureLevel,
    FuseCode,
    Lifetime,
    Model,
    OperandType,
    OperationType,
)

F32 = OperandType.TENSOR_FLOAT32
Q8 = OperandType.TENSOR_QUANT8_ASYMM


def _add_model(a_type=F32, b_type=F32, out_type=F32) -> Model:
    def quant(t):
        return (0.5, 3) if t == Q8 else (0.0, 0)

    m = Model()
    a = m.add_operand(a_type, (2, 2), *quant(a_type))
    b = m.add_operand(b_type, (2, 2), *quant(b_type))
    fuse = m.add_scalar(OperandType.INT32, FuseCode.NONE)
    out = m.add_operand(out_type, (2, 2), *quant(out_type))
    m.add_operation(OperationType.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    return m


def test_valid_model_finishes_and_reports_feature_level():
    m = _add_model().finish()
    assert m.finished
    assert m.feature_level == FeatureLevel.ANDROID_8_1
    assert [o.lifetime for o in m.operands] == [
        Lifetime.MODEL_INPUT, Lifetime.MODEL_INPUT, Lifetime.CONSTANT, Lifetime.MODEL_OUTPUT]


def test_float16_raises_the_feature_level():
    m = _add_model(OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT16,
                   OperandType.TENSOR_FLOAT16).finish()
    assert m.feature_level == FeatureLevel.ANDROID_10


def test_type_mismatch_names_operation_input_and_expected_type():
    with pytest.raises(BadDataError, match=r"operation 0 \(ADD\): input 1 \(input1\) is"
                                           r" TENSOR_QUANT8_ASYMM, expected TENSOR_FLOAT32"):
        _add_model(b_type=Q8)


def test_wrong_input_count():
    m = Model()
    a = m.add_operand(F32, (2,))
    out = m.add_operand(F32, (2,))
    with pytest.raises(BadDataError, match=r"operation 0 \(ADD\): has 1 inputs and 1 outputs;"
                                           r" expected .*\[3\] inputs"):
        m.add_operation(OperationType.ADD, [a], [out])


def test_operand_index_out_of_range():
    m = Model()
    a = m.add_operand(F32, (2,))
    with pytest.raises(BadDataError, match="input 1 refers to operand 7"):
        m.add_operation(OperationType.ADD, [a, 7, a], [a])


@pytest.mark.parametrize("kwargs, message", [
    (dict(type=Q8, dimensions=(2,), scale=0.0), "needs a positive scale"),
    (dict(type=Q8, dimensions=(2,), scale=1.0, zero_point=300), "zero point 300 is outside"),
    (dict(type=F32, dimensions=(2,), scale=0.5), "takes no scale or zero point"),
    (dict(type=OperandType.INT32, dimensions=(2,)), "scalar type INT32 cannot have dimensions"),
    (dict(type=99, dimensions=()), "unknown operand type code 99"),
    (dict(type=F32, dimensions=(-1,)), "negative dimension"),
    (dict(type=Q8, dimensions=(2,), scale=1e39), "scale 1e[+]39 is not a finite float32"),
    (dict(type=Q8, dimensions=(2,), scale=1e-46), "needs a positive scale"),  # 0 in float32
    (dict(type=Q8, dimensions=(2,), scale=float("nan")), "scale nan is not a finite"),
])
def test_operand_validation(kwargs, message):
    with pytest.raises(BadDataError, match=message):
        Model().add_operand(**kwargs)


def test_scales_are_stored_as_the_float32_the_c_api_and_devices_use():
    m = Model()
    a = m.add_operand(Q8, (2,), 0.01, 120)
    assert m.operands[a].scale == float(np.float32(0.01)) != 0.01
    w = m.add_operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, (2, 1))
    m.set_operand_symm_per_channel_quant_params(w, [0.1, 0.3], 0)
    channel_quant = m.operands[w].channel_quant
    assert channel_quant is not None
    assert channel_quant.scales == (float(np.float32(0.1)), float(np.float32(0.3)))


def test_constant_size_must_match_dimensions():
    m = Model()
    a = m.add_operand(F32, (2, 3))
    with pytest.raises(BadDataError, match="value has 5 elements"):
        m.set_operand_value(a, np.zeros(5, np.float32))
    with pytest.raises(BadDataError, match="value has 8 bytes"):
        m.set_operand_value(a, b"\0" * 8)


def test_constant_needs_known_dimensions():
    m = Model()
    a = m.add_operand(F32, (0, 3))
    with pytest.raises(BadDataError, match="fully specified"):
        m.set_operand_value(a, np.zeros(3, np.float32))


def test_unwritten_temporary_is_reported():
    m = Model()
    a = m.add_operand(F32, (2,))
    t = m.add_operand(F32, (2,))
    fuse = m.add_scalar(OperandType.INT32, 0)
    out = m.add_operand(F32, (2,))
    m.add_operation(OperationType.ADD, [a, t, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    with pytest.raises(BadDataError, match=r"input 1 reads operand 1, which has no value"):
        m.finish()


def test_operand_written_twice():
    m = Model()
    a = m.add_operand(F32, (2,))
    fuse = m.add_scalar(OperandType.INT32, 0)
    out = m.add_operand(F32, (2,))
    m.add_operation(OperationType.ADD, [a, a, fuse], [out])
    m.add_operation(OperationType.ADD, [a, a, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    with pytest.raises(BadDataError, match="written by operations 0 and 1"):
        m.finish()


def test_operations_are_sorted_into_run_order():
    m = Model()
    a = m.add_operand(F32, (2,))
    fuse = m.add_scalar(OperandType.INT32, 0)
    t = m.add_operand(F32, (2,))
    out = m.add_operand(F32, (2,))
    m.add_operation(OperationType.MUL, [t, t, fuse], [out])
    m.add_operation(OperationType.ADD, [a, a, fuse], [t])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    assert [op.type for op in m.operations] == [OperationType.ADD, OperationType.MUL]


def test_cycle_is_reported():
    m = Model()
    a = m.add_operand(F32, (2,))
    fuse = m.add_scalar(OperandType.INT32, 0)
    t1 = m.add_operand(F32, (2,))
    t2 = m.add_operand(F32, (2,))
    m.add_operation(OperationType.ADD, [a, t2, fuse], [t1])
    m.add_operation(OperationType.ADD, [a, t1, fuse], [t2])
    m.identify_inputs_and_outputs([a], [t2])
    with pytest.raises(BadDataError, match="cycle"):
        m.finish()


def test_finished_model_is_frozen():
    m = _add_model().finish()
    with pytest.raises(BadStateError, match="finished"):
        m.add_operand(F32, (1,))


def test_quantized_bias_scale_rule_is_enforced_at_finish():
    m = Model()
    x = m.add_operand(Q8, (1, 3, 3, 1), 0.5, 0)
    w = m.add_constant(Q8, np.ones((1, 2, 2, 1), np.uint8), 0.5, 0)
    b = m.add_constant(OperandType.TENSOR_INT32, np.zeros(1, np.int32), 0.3, 0)
    scalars = [m.add_scalar(OperandType.INT32, v) for v in (2, 1, 1, 0)]
    out = m.add_operand(Q8, (1, 3, 3, 1), 1.0, 0)
    m.add_operation(OperationType.CONV_2D, [x, w, b, *scalars], [out])
    m.identify_inputs_and_outputs([x], [out])
    with pytest.raises(BadDataError, match=r"operation 0 \(CONV_2D\): bias scale must equal"):
        m.finish()


def _softmax_model(rank: int) -> Model:
    m = Model()
    x = m.add_operand(F32, (2,) * rank)
    beta = m.add_scalar(OperandType.FLOAT32, 1.0)
    out = m.add_operand(F32, (2,) * rank)
    m.add_operation(OperationType.SOFTMAX, [x, beta], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


@pytest.mark.parametrize("rank, level", [(2, FeatureLevel.ANDROID_8_1),
                                         (4, FeatureLevel.ANDROID_8_1),
                                         (3, FeatureLevel.ANDROID_10)])
def test_level_rules_raise_the_feature_level(rank, level):
    assert _softmax_model(rank).feature_level == level
