"""The conversion pipeline end to end: capture, lowering, serialization, the wrapper."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.tools.host import run_on_host
from torch_nnapi.convert.torchscript.deserialize import deserialize
from torch_nnapi.convert.torchscript.serialize import serialize
from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.nnapi.errors import BadDataError

from ..conftest import package_env
from .harness import assert_close, check, nnapi_ops


class Arith(nn.Module):
    def forward(self, x, y):
        return x * 2 + y, (x - y) / 3


def test_two_inputs_two_outputs_match_eager():
    x, y = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    conversion, _ = check(Arith(), (x, y))
    assert nnapi_ops(conversion) == ["MUL", "ADD", "SUB", "DIV"]
    assert conversion.feature_level == 2  # SUB and DIV arrived with NNAPI 1.1


def test_nhwc_inputs_are_permuted_by_the_wrapper():
    x, y = torch.randn(1, 3, 4, 5), torch.randn(1, 3, 4, 5)
    conversion, _ = check(Arith(), (x, y), nhwc=[True, True])
    model = conversion.model
    assert model.operands[model.inputs[0]].dimensions == (1, 4, 5, 3)
    assert model.operands[model.outputs[0]].dimensions == (1, 4, 5, 3)


def test_flexible_dimensions_serve_several_shapes():
    x, y = torch.randn(1, 3, 4, 5), torch.randn(1, 3, 4, 5)
    others = [(torch.randn(2, 3, 9, 5), torch.randn(2, 3, 9, 5)),
              (torch.randn(1, 3, 2, 5), torch.randn(1, 3, 2, 5))]
    conversion, _ = check(Arith(), (x, y), flexible={0: [0, 2], 1: [0, 2]},
                          run_inputs=[(x, y)] + others)
    model = conversion.model
    assert model.operands[model.inputs[0]].dimensions == (0, 3, 0, 5)
    assert conversion.serialized.patches  # dimensions patched at load time


def test_wrong_input_shape_is_a_clear_error():
    x = torch.randn(1, 3, 4, 5)
    conversion = convert_with_details(Arith(), (x, x))
    with pytest.raises(Exception, match=r"input 0 has shape \[1, 3, 4, 6\]"):
        run_on_host(conversion.module, torch.randn(1, 3, 4, 6), x)


def test_scalar_operands_broadcast_and_alpha():
    class M(nn.Module):
        def forward(self, x, y):
            a = torch.add(x, y, alpha=0.5)
            b = torch.rsub(x, 1.5)
            c = torch.sub(y, x, alpha=2)
            return a * b + c / 4.0

    x, y = torch.randn(2, 3, 4), torch.randn(3, 4)
    check(M(), (x, y))


def test_in_place_ops_rebind_the_mutated_value():
    class M(nn.Module):
        def forward(self, x):
            y = x * 1.0
            y.add_(1.0)
            y.mul_(x)
            return y

    check(M(), torch.randn(2, 3))


def test_shape_arithmetic_is_folded():
    class M(nn.Module):
        def forward(self, x):
            b, c, h, w = x.size()
            return x * (h * w) + c // 2

    conversion, _ = check(M(), torch.randn(1, 3, 4, 5))
    assert nnapi_ops(conversion) == ["MUL", "ADD"]


def test_bool_inputs_pass_as_int32():
    """PyTorch's NNAPI runtime passes no bool tensors: the wrapper casts to int32, the model
    makes TENSOR_BOOL8 again."""
    class M(nn.Module):
        def forward(self, mask, x):
            return torch.where(mask, x, x * 2.0), mask.logical_not()

    mask, x = torch.rand(2, 3) > 0.5, torch.randn(2, 3)
    conversion, _ = check(M(), (mask, x))
    model = conversion.model
    assert model.operands[model.inputs[0]].type == OperandType.TENSOR_INT32
    assert nnapi_ops(conversion)[0] == "NOT_EQUAL"


def test_shape_arithmetic_with_tensors_is_folded():
    """Sizes made 0-dim tensors (as tracing does) and stacked fold too: torchvision's
    detection models pad their image batch this way."""
    class M(nn.Module):
        def forward(self, x):
            h = torch.ops.prim.NumToTensor(x.size(2))
            sizes = torch.stack([h]).to(torch.float32)
            padded = (torch.ceil(torch.max(sizes) / 8.0) * 8.0).to(torch.int64)
            return x * float(padded)

    conversion, _ = check(torch.jit.script(M()), torch.randn(1, 3, 4, 5))
    assert nnapi_ops(conversion) == ["MUL"]


def test_unsupported_ops_are_listed_together():
    class M(nn.Module):
        def forward(self, x):
            a = torch.cumsum(x, 1)
            b = torch.cumsum(a, 0)
            c = torch.erfinv(b)
            return torch.fft.fft(c).real

    with pytest.raises(ConversionError) as info:
        convert_with_details(M(), torch.rand(2, 3))
    grouped = info.value.by_kind()
    assert len(grouped["aten::cumsum"]) == 2
    assert "aten::erfinv" in grouped
    text = str(info.value)
    assert "aten::cumsum x2" in text
    assert "test_pipeline.py" in text  # the source location


def test_an_overload_without_lowering_is_reported_with_its_schema():
    class M(nn.Module):
        def forward(self, x, out):
            return torch.ops.aten.sigmoid.out(x, out=out) * 2

    with pytest.raises(ConversionError) as info:
        convert_with_details(M(), (torch.rand(2, 3), torch.rand(2, 3)))
    assert "the overload aten::sigmoid.out(" in str(info.value)


def test_serialization_round_trip():
    x = torch.randn(2, 3, 4, 5)
    conversion = convert_with_details(Arith(), (x, x))
    assert isinstance(conversion, Conversion)
    model = conversion.model
    again = deserialize(conversion.serialized.words, conversion.serialized.weights).model
    assert [(o.type, o.dimensions, o.scale, o.zero_point) for o in again.operands] == \
        [(o.type, o.dimensions, o.scale, o.zero_point) for o in model.operands]
    assert again.operations == model.operations
    assert (again.inputs, again.outputs) == (model.inputs, model.outputs)
    for a, b in zip(again.operands, model.operands, strict=True):
        if b.value is not None:
            np.testing.assert_array_equal(a.value, b.value)


def test_large_constants_go_to_weight_buffers():
    m = Model()
    a = m.add_operand(OperandType.TENSOR_FLOAT32, (64,))
    big = m.add_constant(OperandType.TENSOR_FLOAT32, np.arange(64, dtype=np.float32))
    fuse = m.add_scalar(OperandType.INT32, 0)
    out = m.add_operand(OperandType.TENSOR_FLOAT32, (64,))
    m.add_operation(OperationType.ADD, [a, big, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    s = serialize(m.finish())
    assert len(s.weights) == 1 and s.weights[0].nbytes == 256
    loaded = deserialize(s.words, s.weights)
    assert [v.source for v in loaded.values] == ["buffer 0", "immediate"]
    np.testing.assert_array_equal(loaded.model.operands[big].value, np.arange(64))


def test_truncated_serialized_model_is_rejected():
    x = torch.randn(2, 3)
    conversion = convert_with_details(Arith(), (x, x))
    assert isinstance(conversion, Conversion)
    words = conversion.serialized.words
    with pytest.raises(BadDataError, match="truncated"):
        deserialize(words[:-3])
    bad = words.copy()
    bad[0] = 7
    with pytest.raises(BadDataError, match="version 7"):
        deserialize(bad)


def test_saved_and_lite_modules_load_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    x, y = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    module = convert_with_details(Arith(), (x, y), nhwc=True).module
    module.save(str(tmp_path / "m.pt"))
    module._save_for_lite_interpreter(str(tmp_path / "m.ptl"))
    torch.save((x, y), tmp_path / "inputs.pt")
    script = f"""
import torch
from torch_nnapi.convert.tools.host import run_on_host
m = torch.jit.load({str(tmp_path / 'm.pt')!r})
x, y = torch.load({str(tmp_path / 'inputs.pt')!r})
out = run_on_host(m, x, y)
assert torch.allclose(out[0], x * 2 + y) and torch.allclose(out[1], (x - y) / 3)
from torch.jit.mobile import _load_for_lite_interpreter
lite = _load_for_lite_interpreter({str(tmp_path / 'm.ptl')!r})
print("ok")
"""
    env = package_env()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_bundled_inputs_work_on_the_result():
    import torch.utils.bundled_inputs as bundled

    x, y = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    module = convert_with_details(Arith(), (x, y)).module
    bundled.augment_model_with_bundled_inputs(
        module, [(bundled.bundle_randn(1, 2, 3, 4), bundled.bundle_randn(1, 2, 3, 4))])
    inputs = module.get_all_bundled_inputs()
    assert len(inputs) == 1
    out = run_on_host(module, *inputs[0])
    assert_close(out, Arith()(*inputs[0]))


def test_lite_module_runs_through_torch_runtime(tmp_path):
    from torch.jit.mobile import _load_for_lite_interpreter

    from .harness import torch_runtime_available

    if not torch_runtime_available():
        pytest.skip("needs torch-nnapi's libneuralnetworks.so (the capi layer)")
    x, y = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    module = convert_with_details(Arith(), (x, y), flexible={0: [3], 1: [3]}).module
    module._save_for_lite_interpreter(str(tmp_path / "m.ptl"))
    lite = _load_for_lite_interpreter(str(tmp_path / "m.ptl"))
    for width in (4, 7):
        a, b = torch.randn(1, 2, 3, width), torch.randn(1, 2, 3, width)
        assert_close(list(lite(a, b)), list(Arith()(a, b)))


def test_options_relax_preference_and_return_shapes():
    x, y = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    conversion = convert_with_details(Arith(), (x, y), relax_fp32_to_fp16=True,
                                      compilation_preference="low_power",
                                      return_shapes=[None, [1, 2, 3, 4]])
    assert isinstance(conversion, Conversion)
    assert conversion.model.relax_float32_to_float16
    program = conversion.module.nnapi
    assert program.relax_f32_to_f16 and program.compilation_preference == 0
    assert_close(run_on_host(conversion.module, x, y), Arith()(x, y))
    with pytest.raises(ValueError, match="compilation_preference"):
        convert_with_details(Arith(), (x, y), compilation_preference="fastest")
    with pytest.raises(ValueError, match="return_shapes"):
        convert_with_details(Arith(), (x, y), return_shapes=[[1, 2]])


def test_outputs_sharing_data_in_different_layouts_and_passthrough_inputs():
    class M(nn.Module):
        def forward(self, x, y):
            z = x * 2
            return z, z.permute(0, 2, 1), z, y

    x, y = torch.randn(2, 3, 4), torch.randn(5)
    conversion, _ = check(M(), (x, y))
    assert len(conversion.model.outputs) == 3  # z twice is one NNAPI output
