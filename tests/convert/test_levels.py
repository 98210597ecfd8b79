"""Feature levels: the converter emits the lowest-level form of each operation (optional
inputs at their defaults left out, level-1 equivalents, channels-last inputs where that
lowers the level, inputs quantized on the host), and ``target_level`` rejects a model that
needs more, naming the operations at fault and their source lines."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_nnapi.convert.errors import ConversionError, FeatureLevelError
from torch_nnapi.nnapi.codes import OperandType

from . import zoo
from .harness import LAYOUTS, Fn, check, convert, nnapi_ops, run


def inputs_of(conversion, op_type: str) -> list[list]:
    """The inputs of each operation of a type: tensors as their type name, scalars as
    their value."""
    model = conversion.model
    found = []
    for op in model.operations:
        if op.type.name == op_type:
            operands = [model.operands[i] for i in op.inputs]
            found.append([o.value.item() if o.is_scalar else o.type.name for o in operands])
    return found


def assert_no_stray_operands(model) -> None:
    """Every operand is read or written by an operation (a dropped default leaves no
    operand behind: an unused BOOL would still be rejected by a level-1 device)."""
    used = set(model.inputs) | set(model.outputs)
    for op in model.operations:
        used.update(op.inputs)
        used.update(op.outputs)
    stray = [model.describe_operand(i) for i in range(len(model.operands)) if i not in used]
    assert not stray, stray


# ------------------------------------------------------------------------ the model zoo


CNNS = {
    "mobilenet_v2": lambda: zoo.MobileNetV2(num_classes=10),
    "resnet18": lambda: zoo.ResNet18(num_classes=10),
}


@pytest.mark.parametrize("name", sorted(CNNS))
def test_zoo_cnns_need_feature_level_1(name):
    """NCHW in, as usual: the converter hands the input to NNAPI channels-last (NNAPI's
    NCHW flag needs level 3), every convolution and pool gives no optional input, and the
    global average pool is an AVERAGE_POOL_2D (MEAN needs level 2)."""
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(CNNS[name]())
    conversion, _ = check(model, torch.randn(1, 3, 64, 64), target_level=1)
    assert conversion.feature_level == 1
    assert all(m.level == 1 for m in conversion.model.matches)
    assert_no_stray_operands(conversion.model)
    for op_type, inputs in (("CONV_2D", 10), ("DEPTHWISE_CONV_2D", 11),
                            ("MAX_POOL_2D", 10), ("AVERAGE_POOL_2D", 10)):
        assert all(len(i) == inputs for i in inputs_of(conversion, op_type)), op_type
    assert "MEAN" not in nnapi_ops(conversion)
    # asked to keep PyTorch's order, the same model needs the NCHW flag: level 3
    forced = convert(model, torch.randn(1, 3, 64, 64), nhwc=False)
    assert forced.feature_level == 3


@pytest.mark.parametrize("name", sorted(CNNS))
def test_quantized_zoo_cnns_need_feature_level_1(name, qnnpack):
    """Per-tensor quantized: the input is also quantized on the host (QUANTIZE needs 3)."""
    from .harness import compare_in_quanta, dequantized_scale, run
    from .lowerings.test_quantized import fx_quantize
    from .test_models import QUANTIZED_MODELS

    x = torch.randn(1, 3, 64, 64)
    q = fx_quantize(zoo.randomize_batchnorm(QUANTIZED_MODELS[name]()), x)
    conversion = convert(q, x, target_level=1)
    stats = compare_in_quanta(run(conversion.module, (x,)), q(x), dequantized_scale(conversion))
    assert conversion.feature_level == 1
    assert "QUANTIZE" not in nnapi_ops(conversion)
    assert stats.top1_agree and stats.max_quanta <= 3, stats


# ------------------------------------------------------------------------ target_level


class NeedsLevel3(nn.Module):
    """A real level-3 model: EXP (level 3), bilinear upsampling with PyTorch's half-pixel
    centers (GATHERs, level 3) and a mean over the width (MEAN, level 2)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        z = torch.exp(y * 0.1)
        up = F.interpolate(z, scale_factor=2, mode="bilinear", align_corners=False)
        return up.mean(-1)


def _line_of(snippet: str) -> int:
    lines, first = inspect.getsourcelines(NeedsLevel3.forward)
    return first + next(i for i, line in enumerate(lines) if snippet in line)


def test_target_level_names_every_operation_and_source_line():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(FeatureLevelError) as raised:
        convert(NeedsLevel3().eval(), x, target_level=1)
    error = raised.value
    assert isinstance(error, ConversionError)
    assert (error.target_level, error.feature_level) == (1, 3)
    text = str(error)
    assert text.splitlines()[0].startswith(
        "the converted model needs NNAPI feature level 3 (Android 10, API 29), above the"
        " target level 1 (Android 8.1, API 27): a device of level 1 would reject")
    here = __file__.rsplit("/", 1)[-1]
    exp_line, up_line = _line_of("torch.exp"), _line_of("F.interpolate")
    mean_line = _line_of(".mean(-1)")
    assert "  EXP x1 (level 3): EXP was introduced at level 3" in text
    assert f"from aten::exp at {__file__}:{exp_line}" in text
    assert "GATHER x" in text and "GATHER was introduced at level 3" in text
    assert f"from aten::upsample_bilinear2d at {__file__}:{up_line}" in text
    assert "  MEAN x1 (level 2): MEAN was introduced at level 2" in text
    assert f"from aten::mean at {__file__}:{mean_line}" in text
    # the convolution, relu and scaling are level 1: not listed
    assert "CONV_2D" not in text and "MUL" not in text
    kinds = {use.kind for use in error.uses}
    assert kinds == {"aten::exp", "aten::upsample_bilinear2d", "aten::mean"}
    assert all(here in use.location for use in error.uses)
    assert len(error.uses) == len(error.operations)
    exp = next(use for use in error.uses if use.kind == "aten::exp")
    assert exp.reason == "EXP: EXP was introduced at level 3"
    assert exp.location.startswith(f"{__file__}:{exp_line}")


def test_target_level_2_lists_only_what_level_2_lacks():
    with pytest.raises(FeatureLevelError) as raised:
        convert(NeedsLevel3().eval(), torch.randn(1, 3, 8, 8), target_level=2)
    text = str(raised.value)
    assert "EXP x1" in text and "GATHER x" in text and "MEAN" not in text


def test_target_level_3_and_no_target_accept_it():
    x = torch.randn(1, 3, 8, 8)
    for target in (3, None):
        conversion, _ = check(NeedsLevel3(), x, target_level=target)
        assert conversion.feature_level == 3


def test_target_level_must_be_a_feature_level():
    with pytest.raises(ValueError):
        convert(Fn(lambda x: x * 2.0), torch.randn(2, 3), target_level=0)


def test_float16_needs_level_3():
    """float16 arithmetic is level 3 however it is written: the model-wide reason is
    listed too."""
    model = Fn(lambda x: (x.half() * 2.0).float())
    with pytest.raises(FeatureLevelError) as raised:
        convert(model, torch.randn(2, 3), target_level=2)
    text = str(raised.value)
    assert "  the model: float16 operands (TENSOR_FLOAT16) need level 3" in text
    assert "CAST x2 (level 3): CAST was introduced at level 3" in text


# ------------------------------------------------------------------------ lowest-level forms


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_convolution_gives_only_the_optional_inputs_it_needs(nhwc):
    x = torch.randn(1, 4, 9, 9)
    plain, _ = check(nn.Conv2d(4, 6, 3), x, nhwc=nhwc)
    dilated, _ = check(nn.Conv2d(4, 6, 3, dilation=2), x, nhwc=nhwc)
    # NHWC and dilation 1: nothing optional (level 1); NCHW: the layout flag only
    assert [len(i) for i in inputs_of(plain, "CONV_2D")] == [11 if not nhwc else 10]
    assert plain.feature_level == (3 if not nhwc else 1)
    # a dilation is given with the layout flag before it, whatever the layout
    (conv,) = inputs_of(dilated, "CONV_2D")
    assert len(conv) == 13 and bool(conv[10]) == (not nhwc) and conv[11:] == [2, 2]
    assert dilated.feature_level == 3
    for conversion in (plain, dilated):
        assert_no_stray_operands(conversion.model)


@pytest.mark.parametrize("shape,dim,given", [((2, 5), -1, False), ((2, 3, 4, 5), 3, False),
                                             ((2, 5), 0, True), ((2, 3, 5), -1, False)])
def test_softmax_axis_given_only_when_not_the_last(shape, dim, given):
    conversion, _ = check(Fn(lambda x: torch.softmax(x, dim)), torch.randn(*shape))
    (softmax,) = inputs_of(conversion, "SOFTMAX")
    assert len(softmax) == (3 if given else 2)
    # before level 3 SOFTMAX took only 2-D and 4-D inputs, with or without an axis
    expected = 3 if given or len(shape) not in (2, 4) else 1
    assert conversion.feature_level == expected


def test_arithmetic_with_constants_uses_level_1_operations():
    x = torch.randn(2, 3)
    conversion, _ = check(Fn(lambda x: (x - 1.5) / 4.0 - torch.tensor([1.0, 2.0, 3.0])), x)
    assert nnapi_ops(conversion) == ["ADD", "MUL", "ADD"]
    assert conversion.feature_level == 1
    # what has no exact level-1 form keeps SUB and DIV (level 2)
    conversion, _ = check(Fn(lambda x, y: (2.0 - x) / 3.0 - y), (x, torch.randn(2, 3)))
    assert nnapi_ops(conversion) == ["SUB", "DIV", "SUB"]
    assert conversion.feature_level == 2


def test_subtracting_and_dividing_constants_is_exact():
    """x - c as x + (-c), and x / 2**k as x * 2**-k, bit for bit (also for signed zeros,
    infinities and values that leave the normal range)."""
    special = torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-38, -1e-45, 3e38, float("inf"),
                            -float("inf"), 1 / 3])
    x = torch.cat([special, torch.randn(54) * 1e3]).reshape(4, 16)
    for fn in (lambda x: x - 0.0, lambda x: x - (-0.0), lambda x: x - 1 / 3,
               lambda x: x / 2.0 ** -120, lambda x: x / 2.0 ** 100, lambda x: x / -0.25,
               lambda x: x - torch.arange(16, dtype=torch.uint8)):
        conversion = convert(Fn(fn), x)
        assert set(nnapi_ops(conversion)) <= {"ADD", "MUL"}
        from .harness import run

        actual, expected = run(conversion.module, (x,)), fn(x)
        assert torch.equal(actual.view(torch.int32), expected.view(torch.int32))


def test_global_average_pool_of_flexible_sizes_is_level_1():
    model = Fn(lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1) + x.mean((2, 3)))
    small, large = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 9, 11)
    conversion, _ = check(model, small, flexible={0: [2, 3]}, nhwc=True,
                          run_inputs=[small, large])
    assert conversion.feature_level == 1
    assert nnapi_ops(conversion).count("AVERAGE_POOL_2D") == 2


# ------------------------------------------------------------------------ input layouts


class Scaled(nn.Module):
    """No convolution: channels-last would only add a TRANSPOSE before the flatten."""

    def forward(self, x):
        return torch.softmax(torch.relu(x * 3.0 - 1.0).flatten(1), 1)


def test_input_layout_is_chosen_by_feature_level():
    x = torch.randn(1, 3, 8, 8)
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2))
    conversion, _ = check(cnn, x)
    assert conversion.lowered.specs[0].nhwc and conversion.feature_level == 1
    assert conversion.lowered.inputs[0].layout == (0, 2, 3, 1)
    conversion, _ = check(Scaled(), x)
    assert not conversion.lowered.specs[0].nhwc and conversion.feature_level == 1
    assert "TRANSPOSE" not in nnapi_ops(conversion)
    # an explicit choice is kept even when it costs a level
    conversion, _ = check(cnn, x, nhwc=False)
    assert not conversion.lowered.specs[0].nhwc and conversion.feature_level == 3
    conversion, _ = check(Scaled(), x, nhwc=[True])
    assert conversion.lowered.specs[0].nhwc and conversion.feature_level == 2


# ------------------------------------------------------------------------ quantized inputs


class QuantizedReluPool(nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        return F.max_pool2d(torch.relu(q), 2).dequantize()


def test_input_only_quantized_is_quantized_on_the_host():
    x = torch.randn(1, 2, 6, 6) * 4  # saturates at both ends of the quint8 range
    conversion, _ = check(QuantizedReluPool(), x)
    model = conversion.model
    operand = model.operands[model.inputs[0]]
    assert (operand.type, operand.scale, operand.zero_point) == \
        (OperandType.TENSOR_QUANT8_ASYMM, pytest.approx(0.05, rel=1e-7), 128)  # float32
    assert "QUANTIZE" not in nnapi_ops(conversion)
    assert conversion.feature_level == 1
    # exactly PyTorch's quantization, ties included (x.5 quanta)
    ties = (torch.arange(36, dtype=torch.float32).reshape(1, 1, 6, 6) - 18.5) * 0.05
    ties = torch.cat([ties, -ties], 1)
    from .harness import run

    assert torch.equal(run(conversion.module, (ties,)), QuantizedReluPool()(ties))


def test_input_also_read_as_float_keeps_quantize():
    model = Fn(lambda x: torch.quantize_per_tensor(x, 0.05, 128, torch.quint8).dequantize() + x)
    conversion, _ = check(model, torch.randn(2, 8))
    model_ = conversion.model
    assert model_.operands[model_.inputs[0]].type == OperandType.TENSOR_FLOAT32
    assert "QUANTIZE" in nnapi_ops(conversion) and conversion.feature_level == 3


def test_saved_module_quantizes_its_input(tmp_path):
    conversion = convert(QuantizedReluPool(), torch.randn(1, 2, 6, 6))
    path = tmp_path / "q.pt"
    torch.jit.save(conversion.module, str(path))
    loaded = torch.jit.load(str(path))
    x = torch.randn(1, 2, 6, 6)
    from .harness import run

    assert torch.equal(run(loaded, (x,)), QuantizedReluPool()(x))


def test_channels_last_failure_keeps_pytorch_order(monkeypatch):
    """A converter bug met only channels-last does not fail a conversion that works in
    PyTorch's order: that one is kept, with a warning naming the bug."""
    import dataclasses

    from torch_nnapi.convert.errors import ConverterBug
    from torch_nnapi.convert.lowerings import LOWERINGS, lowering_for

    honest = lowering_for("aten::relu")
    assert honest is not None

    def fails_channels_last(cx, x):
        if x.layout == (0, 2, 3, 1):
            raise ConverterBug("relu of a channels-last tensor (simulated)")
        return honest.fn(cx, x)

    monkeypatch.setitem(LOWERINGS, "aten::relu", dataclasses.replace(honest,
                                                                      fn=fails_channels_last))
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    with pytest.warns(RuntimeWarning, match="relu of a channels-last tensor"):
        conversion, _ = check(model, torch.randn(1, 3, 8, 8))
    assert not conversion.lowered.specs[0].nhwc and conversion.feature_level == 3


# ------------------------------------------------------------------------ target level 4


@pytest.mark.parametrize("fn, level4_op, composed", [
    (F.hardswish, "HARD_SWISH", "DIV"),
    (lambda x: F.elu(x, 0.7), "ELU", "EXP"),
    (F.selu, "ELU", "EXP"),
])
def test_target_level_4_uses_the_level_4_activations(fn, level4_op, composed):
    x = torch.randn(2, 8) * 4
    lowest, _ = check(Fn(fn), x)
    assert level4_op not in nnapi_ops(lowest) and composed in nnapi_ops(lowest)
    conversion, worst = check(Fn(fn), x, target_level=4)
    assert level4_op in nnapi_ops(conversion) and composed not in nnapi_ops(conversion)
    assert conversion.feature_level == 4 and worst < 1e-5


def test_target_level_4_quantized_hardswish_is_one_hard_swish(qnnpack):
    model = nn.Sequential(torch.ao.quantization.QuantStub(), nn.Hardswish(),
                          torch.ao.quantization.DeQuantStub()).eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    prepared = torch.ao.quantization.prepare(model)
    prepared(torch.randn(4, 16) * 3)
    quantized = torch.ao.quantization.convert(prepared)
    x = torch.randn(4, 16) * 3
    conversion = convert(quantized, x, target_level=4)
    assert "HARD_SWISH" in nnapi_ops(conversion) and "DIV" not in nnapi_ops(conversion)
    with torch.no_grad():
        expected = quantized(x)
    scale = conversion.model.operands[conversion.model.inputs[0]].scale or 1.0
    actual = run(conversion.module, (x,))
    assert (actual - expected).abs().max().item() <= 2 * scale


def test_target_level_4_fills_a_large_constant_of_one_value():
    """A constant of 32 x 32 float32 (far over the 128 bytes NNAPI copies into a model)
    holding one value becomes FILL; a small one stays a constant."""
    big = Fn(lambda x: x + torch.full((32, 32), 2.5))
    small = Fn(lambda x: x + torch.full((2, 2), 2.5))
    conversion, worst = check(big, torch.randn(32, 32), target_level=4)
    assert "FILL" in nnapi_ops(conversion) and worst == 0.0
    assert "FILL" not in nnapi_ops(check(big, torch.randn(32, 32))[0])
    assert "FILL" not in nnapi_ops(check(small, torch.randn(2, 2), target_level=4)[0])


def test_target_level_3_keeps_hardswish_composed():
    """The lowest form stays the default: target level 3 accepts hardswish (composed)."""
    conversion, _ = check(Fn(F.hardswish), torch.randn(2, 8), target_level=3)
    assert conversion.feature_level <= 3
