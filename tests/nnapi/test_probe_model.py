"""The probe model file (tools/nnapi_probe.c's input): written, read back, bad files named."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import Lifetime, Model, OperandType, OperationType
from torch_nnapi.nnapi.probe_model import (
    VALUE_LIMIT,
    ProbeModelError,
    probe_model_text,
    read_probe_model,
    write_probe_model,
)

from ._probe_models import mixed_model


def test_a_model_read_back_is_the_model_written_with_its_weights_as_zeros(tmp_path):
    model = mixed_model()
    path = tmp_path / "model.txt"
    write_probe_model(model, path)
    again = read_probe_model(path)
    assert probe_model_text(again) == path.read_text()
    assert [o.type for o in again.operations] == [o.type for o in model.operations]
    for before, after in zip(model.operands, again.operands, strict=True):
        assert (after.type, after.dimensions, after.scale, after.zero_point,
                after.channel_quant, after.lifetime) == \
            (before.type, before.dimensions, before.scale, before.zero_point,
             before.channel_quant, before.lifetime)
        if before.lifetime is Lifetime.CONSTANT:
            assert before.value is not None and after.value is not None
            if before.value.nbytes <= VALUE_LIMIT:
                np.testing.assert_array_equal(after.value, before.value)
            else:
                assert not after.value.any()
    assert "zeros 1 1728" in path.read_text()  # the first convolution's weights


def test_an_omitted_input_and_a_relaxed_model_are_kept(tmp_path):
    m = Model()
    x = m.add_operand(OperandType.TENSOR_FLOAT32, (2, 3))
    axis = m.add_scalar(OperandType.INT32, 1)
    beta = m.add_operand(OperandType.FLOAT32)
    m.set_operand_value(beta, 1.5)
    out = m.add_operand(OperandType.TENSOR_FLOAT32, (2, 3))
    m.add_operation(OperationType.SOFTMAX, [x, beta, axis], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    path = tmp_path / "softmax.txt"
    write_probe_model(m, path)
    again = read_probe_model(path)
    assert again.relax_float32_to_float16
    value = again.operands[beta].value
    assert value is not None and value.item() == 1.5


def test_an_if_or_while_body_cannot_be_written():
    body = Model()
    a = body.add_operand(OperandType.TENSOR_FLOAT32, (1,))
    b = body.add_operand(OperandType.TENSOR_FLOAT32, (1,))
    body.add_operation(OperationType.ABS, [a], [b])
    body.identify_inputs_and_outputs([a], [b])
    body.finish()
    m = Model()
    cond = m.add_operand(OperandType.TENSOR_BOOL8, (1,))
    x = m.add_operand(OperandType.TENSOR_FLOAT32, (1,))
    then, other = m.add_model_operand(body), m.add_model_operand(body)
    y = m.add_operand(OperandType.TENSOR_FLOAT32, (1,))
    m.add_operation(OperationType.IF, [cond, then, other, x], [y])
    m.identify_inputs_and_outputs([cond, x], [y])
    m.finish()
    with pytest.raises(ProbeModelError, match="operand 2 is a MODEL operand"):
        probe_model_text(m)


@pytest.mark.parametrize(("text", "problem"), [
    ("", ":0: not a probe model file"),
    ('{"operands": []}\n', ":1: not a probe model file"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\n",
     ":2: the file ends before its 'end' line"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_INT32 0 0 1 4\nend\n",
     ":2: operand 0: code 3 is not TENSOR_INT32"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 2 4\nend\n",
     ":2: operand 0 dimensions: 2 listed, 1 given"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\nvalue 0 16 zz\nend\n",
     ":3: value: the bytes are not hexadecimal"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\nzeros 0 8\nend\n",
     ":3: zeros: 8 bytes for operand 0, which has 16"),
    ("torch-nnapi-probe-model 1\noperation 0 ADD 3 0 1 2 1 3\nend\n",
     ":2: operation 0 \\(ADD\\): input 0 refers to operand 0, but the model has 0 operands"),
    ("torch-nnapi-probe-model 1\nshape 1 2\nend\n", ":2: unknown line 'shape'"),
])
def test_a_bad_file_is_one_line_naming_the_line(tmp_path, text, problem):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ProbeModelError, match=problem) as caught:
        read_probe_model(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ProbeModelError, match="missing.txt: cannot be read"):
        read_probe_model(tmp_path / "missing.txt")
