"""Models that refer to models (MODEL operands), and IF and WHILE's rules for them: the called
models' inputs and outputs must agree with what the operation passes and receives."""

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
I32 = OperandType.TENSOR_INT32
BOOL8 = OperandType.TENSOR_BOOL8
Q8S = OperandType.TENSOR_QUANT8_ASYMM_SIGNED


def _adder(dims=(3,), operand_type=F32, scale=0.0, zero_point=0) -> Model:
    """out = x + 1 (finished)."""
    m = Model()
    x = m.add_operand(operand_type, dims, scale, zero_point)
    one = m.add_constant(operand_type, np.ones((1,)), scale, zero_point) \
        if operand_type != F32 else m.add_constant(F32, np.ones(1, np.float32))
    fuse = m.add_scalar(OperandType.INT32, FuseCode.NONE)
    out = m.add_operand(operand_type, dims, scale, zero_point)
    m.add_operation(OperationType.ADD, [x, one, fuse], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


def _less_than(limit: float, dims=(3,)) -> Model:
    """[x[0] < limit] (finished): a WHILE condition."""
    m = Model()
    x = m.add_operand(F32, dims)
    begin = m.add_constant(I32, np.zeros(len(dims), np.int32))
    size = m.add_constant(I32, np.ones(len(dims), np.int32))
    first = m.add_operand(F32, (1,) * len(dims))
    m.add_operation(OperationType.SLICE, [x, begin, size], [first])
    shape = m.add_constant(I32, np.array([1], np.int32))
    flat = m.add_operand(F32, (1,))
    m.add_operation(OperationType.RESHAPE, [first, shape], [flat])
    bound = m.add_constant(F32, np.array([limit], np.float32))
    out = m.add_operand(BOOL8, (1,))
    m.add_operation(OperationType.LESS, [flat, bound], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


def _if_model(then_model: Model, else_model: Model, x_dims=(3,), out_dims=(3,),
              condition_dims=(1,)) -> Model:
    m = Model()
    condition = m.add_operand(BOOL8, condition_dims)
    then_ref = m.add_model_operand(then_model)
    else_ref = m.add_model_operand(else_model)
    x = m.add_operand(F32, x_dims)
    out = m.add_operand(F32, out_dims)
    m.add_operation(OperationType.IF, [condition, then_ref, else_ref, x], [out])
    m.identify_inputs_and_outputs([condition, x], [out])
    return m


def test_if_with_agreeing_branches_finishes_at_feature_level_4():
    then_model, else_model = _adder(), _adder()
    m = _if_model(then_model, else_model).finish()
    assert m.feature_level == FeatureLevel.ANDROID_11
    assert m.operands[1].lifetime is Lifetime.REFERENCED_MODEL
    assert m.referenced_models() == [then_model, else_model]


def test_referenced_models_are_listed_once_each_after_those_they_refer_to():
    branch = _adder()
    inner = _if_model(branch, branch).finish()
    assert inner.referenced_models() == [branch]  # both branches are the same model
    outer = _if_model(inner, _adder())
    assert outer.referenced_models()[:2] == [branch, inner]


@pytest.mark.parametrize("changes, message", [
    (dict(x_dims=(4,)), r"input 3 \(operand 3\) has dimensions \[4\], but then_model's input 0"
                        r" has \[3\]"),
    (dict(out_dims=(5,)), r"output 0 \(operand 4\) has dimensions \[5\], but then_model's"
                          r" output 0 has"),
    (dict(condition_dims=(2,)), r"the condition must be a TENSOR_BOOL8 of shape \[1\]"),
])
def test_if_rejects_operands_that_disagree_with_the_branches(changes, message):
    m = _if_model(_adder(), _adder(), **changes)
    with pytest.raises(BadDataError, match=r"operation 0 \(IF\): " + message):
        m.finish()


def test_if_rejects_branches_of_another_arity_or_quantization():
    signed = _adder(operand_type=Q8S, scale=0.5, zero_point=-3)
    with pytest.raises(BadDataError, match=r"input 3 \(operand 3\) is TENSOR_FLOAT32, but"
                                           r" then_model's input 0 is TENSOR_QUANT8_ASYMM_SIGNED"):
        _if_model(signed, _adder()).finish()
    two_inputs = _if_model(_adder(), _adder())
    other = Model()
    a, b = other.add_operand(F32, (3,)), other.add_operand(F32, (3,))
    fuse = other.add_scalar(OperandType.INT32, 0)
    c = other.add_operand(F32, (3,))
    other.add_operation(OperationType.ADD, [a, b, fuse], [c])
    other.identify_inputs_and_outputs([a, b], [c])
    two_inputs.operands[2].model = other.finish()
    with pytest.raises(BadDataError, match=r"else_model has 2 inputs and 1 outputs; the IF"
                                           r" passes 1 and receives 1"):
        two_inputs.finish()


def _while_model(condition: Model, body: Model, dims=(3,)) -> Model:
    m = Model()
    cond_ref, body_ref = m.add_model_operand(condition), m.add_model_operand(body)
    x = m.add_operand(F32, dims)
    out = m.add_operand(F32, dims)
    m.add_operation(OperationType.WHILE, [cond_ref, body_ref, x], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m


def test_while_with_agreeing_condition_and_body_finishes():
    m = _while_model(_less_than(10.0), _adder()).finish()
    assert m.feature_level == FeatureLevel.ANDROID_11


def test_while_rejects_a_condition_that_is_not_one_bool8():
    with pytest.raises(BadDataError, match=r"condition_model has 1 inputs and 1 outputs|"
                                           r"condition_model's output 0 must be a TENSOR_BOOL8"):
        _while_model(_adder(), _adder()).finish()


def test_while_rejects_a_body_whose_outputs_cannot_feed_its_inputs():
    body = Model()
    x = body.add_operand(F32, (3,))
    shape = body.add_constant(I32, np.array([3, 1], np.int32))
    out = body.add_operand(F32, (3, 1))
    body.add_operation(OperationType.RESHAPE, [x, shape], [out])
    body.identify_inputs_and_outputs([x], [out])
    m = Model()
    cond_ref, body_ref = m.add_model_operand(_less_than(1.0)), m.add_model_operand(body.finish())
    a = m.add_operand(F32, (3,))
    result = m.add_operand(F32, (3,))
    m.add_operation(OperationType.WHILE, [cond_ref, body_ref, a], [result])
    m.identify_inputs_and_outputs([a], [result])
    with pytest.raises(BadDataError, match=r"operation 0 \(WHILE\): output 0 \(operand 3\) has"
                                           r" dimensions \[3\], but body_model's output 0 has"
                                           r" \[3, 1\]"):
        m.finish()


def test_model_operands_are_set_only_from_finished_models():
    m = Model()
    ref = m.add_operand(OperandType.MODEL)
    tensor = m.add_operand(F32, (3,))
    unfinished = Model()
    with pytest.raises(BadDataError, match="must be finished first"):
        m.set_operand_value_from_model(ref, unfinished)
    with pytest.raises(BadDataError, match="must be finished first"):
        m.set_operand_value_from_model(ref, m)
    with pytest.raises(BadDataError, match="only a MODEL operand refers to a model"):
        m.set_operand_value_from_model(tensor, _adder())
    with pytest.raises(BadDataError, match="set it with set_operand_value_from_model"):
        m.set_operand_value(ref, np.zeros(1))
    with pytest.raises(BadDataError, match="model references cannot be inputs or outputs"):
        m.identify_inputs_and_outputs([ref], [tensor])
    with pytest.raises(BadDataError, match="MODEL operand of dimensions|cannot have dimensions"):
        m.add_operand(OperandType.MODEL, (1,))


def test_a_model_operand_left_unset_is_reported_at_finish():
    m = _if_model(_adder(), _adder())
    m.operands[1].lifetime, m.operands[1].model = Lifetime.TEMPORARY, None
    with pytest.raises(BadDataError, match=r"operand 1 is a MODEL operand that refers to no"
                                           r" model"):
        m.finish()


def test_a_finished_model_takes_no_references():
    m = _adder()
    with pytest.raises(BadStateError):
        m.add_model_operand(_adder())


def test_if_rejects_an_omitted_condition():
    m = _if_model(_adder(), _adder())
    m.operands[0].lifetime = Lifetime.NO_VALUE
    with pytest.raises(BadDataError, match=r"input 0 \(condition\) has no value but is"
                                           r" required"):
        m.finish()
