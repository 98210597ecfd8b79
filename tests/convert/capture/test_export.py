"""The torch.export front-end: the same lowerings, the same results as the TorchScript one."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_nnapi
from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.capture.export import capture_exported
from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.fallback.convert import PartitionedConversion

from .. import zoo
from ..harness import check, nnapi_ops, run
from ..test_flexible import SHAPES, Net


class Heads(nn.Module):
    """Conv + batch norm, pooling, size arithmetic, cat, slicing, a (values, indices)
    result picked apart, split into a Tensor[] and three outputs."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        b, c, h, w = y.shape
        y = y.view(b, c, h * w).mean(-1)
        z = torch.cat([y, y * 2], 1)
        values, indices = y.max(1)
        first, _ = torch.split(z, 8, dim=1)
        return self.fc(first), values, indices


MODELS = {
    "heads": (Heads, (1, 3, 16, 20)),
    "mobilenet_v2": (lambda: zoo.MobileNetV2(num_classes=10, width=0.35), (1, 3, 32, 32)),
    "mobilenet_v3_small": (lambda: zoo.MobileNetV3Small(num_classes=10), (1, 3, 32, 32)),
    "resnet18": (lambda: zoo.ResNet18(num_classes=10), (1, 3, 32, 32)),
    "shufflenet_v2": (lambda: zoo.ShuffleNetV2(num_classes=10), (1, 3, 32, 32)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_exported_models_lower_as_traced_ones(name):
    torch.manual_seed(0)
    build, shape = MODELS[name]
    model = zoo.randomize_batchnorm(build())
    x = torch.randn(*shape)
    exported, _ = check(model, x, capture="export")
    traced, _ = check(model, x, capture="trace")
    # one lowering per op whichever front-end produced the node; batch norms folded alike
    assert sorted(nnapi_ops(exported)) == sorted(nnapi_ops(traced))


def test_exported_program_is_taken_with_its_own_example_inputs():
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(Heads())
    x = torch.randn(1, 3, 16, 20)
    program = torch.export.export(model, (x,))
    # example_inputs from the program; torch_nnapi.convert is a callable package, which mypy
    # takes for a plain module
    module = torch_nnapi.convert(program)  # type: ignore[operator]
    with torch.no_grad():
        expected = model(x)
    actual = run(module, (x,))
    assert all(torch.allclose(a.float(), e.float(), atol=1e-5)
               for a, e in zip(actual, expected, strict=True))


def test_dims_of_an_exported_program_are_flexible():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(*SHAPES[1])  # export fixes dimensions of size 1: a batch of 2
    dynamic = torch.export.Dim.DYNAMIC  # Net's slicing makes named Dims too strict to export
    program = torch.export.export(model, (x,),
                                  dynamic_shapes={"x": {0: dynamic, 2: dynamic, 3: dynamic}})
    conversion = convert_with_details(program, (x,))
    assert isinstance(conversion, Conversion)
    assert conversion.lowered.specs[0].flexible == (0, 2, 3)
    for shape in SHAPES:
        y = torch.randn(*shape)
        with torch.no_grad():
            expected = model(y)
        for a, e in zip(run(conversion.module, (y,)), expected, strict=True):
            assert torch.allclose(a, e, atol=1e-4), shape


def test_flexible_dims_of_a_module_become_export_dims():
    torch.manual_seed(0)
    model = Net().eval()
    check(model, torch.randn(*SHAPES[0]), capture="export", flexible={0: [0, 2, 3]},
          run_inputs=[torch.randn(*s) for s in SHAPES])


class Specialized(nn.Module):
    def forward(self, x):
        return x.reshape(1, 3 * 8 * 8)  # fixes height and width


def test_a_dimension_the_model_fixes_cannot_be_flexible():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ValueError, match="input 0 dimension 2 cannot be flexible"):
        convert_with_details(Specialized(), (x,), capture="export", flexible={0: [2]})
    program = torch.export.export(Specialized(), (x,))
    with pytest.raises(ValueError, match="input 0 dimension 3 cannot be flexible: the"
                                         " exported program has a fixed size there"):
        convert_with_details(program, (x,), flexible={0: [3]})


def test_front_end_choice_is_checked():
    x = torch.randn(1, 3, 8, 8)
    program = torch.export.export(Specialized(), (x,))
    with pytest.raises(ValueError, match="captured with capture='export'"):
        convert_with_details(program, (x,), capture="trace")
    with pytest.raises(ValueError, match="capture must be one of trace, export"):
        convert_with_details(Specialized(), (x,), capture="script")
    scripted = torch.jit.trace(Specialized(), (x,))
    with pytest.raises(ValueError, match="TorchScript module cannot be exported"):
        convert_with_details(scripted, (x,), capture="export")
    with pytest.raises(TypeError, match="takes 1 input, but 2 example inputs given"):
        convert_with_details(program, (x, x))
    with pytest.raises(TypeError, match="expected an nn.Module, an ExportedProgram or the"
                                        " GraphModule of one, got str"):
        convert_with_details("a model", (x,), capture="export")


# run_decompositions deep-copies the program, and torch's own copy of its tree specs warns
@pytest.mark.filterwarnings(
    "ignore:`isinstance\\(treespec, LeafSpec\\)` is deprecated:FutureWarning")
def test_core_aten_graph_after_decompositions():
    """run_decompositions() gives convolution, _native_batch_norm_legit_no_training,
    max_pool2d_with_indices and addmm: each lowers (the unread outputs dropped)."""
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(Heads())
    x = torch.randn(1, 3, 16, 20)
    program = torch.export.export(model, (x,)).run_decompositions()
    kinds = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert {"aten.convolution.default", "aten.max_pool2d_with_indices.default",
            "aten._native_batch_norm_legit_no_training.default"} <= kinds
    conversion = convert_with_details(program, (x,))
    assert nnapi_ops(conversion).count("MUL") == 1  # the model's y * 2: the batch norm folded
    with torch.no_grad():
        expected = model(x)
    for a, e in zip(run(conversion.module, (x,)), expected, strict=True):
        assert torch.allclose(a.float(), e.float(), atol=1e-5)


def test_nodes_carry_the_users_source_location():
    class Cumulative(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0)  # no NNAPI lowering

    with pytest.raises(ConversionError) as caught:
        convert_with_details(Cumulative(), (torch.randn(4, 4),), capture="export")
    text = str(caught.value)
    assert "aten::cumsum x1" in text and "no lowering for this op" in text
    assert "capture/test_export.py:" in text and "(forward)" in text


def test_control_flow_operators_are_reported_by_name():
    class Branch(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))

    with pytest.raises(ConversionError, match="higher_order::cond x1"):
        convert_with_details(Branch(), (torch.randn(4),), capture="export")


class ConvCumsum(nn.Module):
    """A convolution, then cumsum (no NNAPI lowering), then more NNAPI work."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(torch.cumsum(self.conv(x), 2)) * 2


def test_cpu_fallback_partitions_the_exported_graph():
    """The CPU parts of an exported model run as a TorchScript trace of the exported graph,
    its Dims flexible in the regions too."""
    torch.manual_seed(0)
    model, x = ConvCumsum().eval(), torch.randn(1, 3, 12, 16)
    dims = {"x": {2: torch.export.Dim.DYNAMIC, 3: torch.export.Dim.DYNAMIC}}
    program = torch.export.export(model, (x,), dynamic_shapes=dims)
    with pytest.raises(ConversionError, match="fallback=True.* would convert the model into 2"
                       " NNAPI regions"):
        convert_with_details(program)
    conversion = convert_with_details(program, fallback=True)
    assert isinstance(conversion, PartitionedConversion)
    assert [c.kind for c in conversion.report.cpu] == ["aten::cumsum"]
    assert len(conversion.regions) == 2
    for y in (x, torch.randn(1, 3, 20, 8)):
        with torch.no_grad():
            assert torch.allclose(run(conversion.module, (y,)), model(y), atol=1e-5)
    ops = convert_with_details(model, (x,), capture="export", fallback=True,
                               fallback_ops=["aten::relu"])
    assert isinstance(ops, PartitionedConversion)
    assert [c.kind for c in ops.report.cpu] == ["aten::cumsum", "aten::relu"]
    with torch.no_grad():
        assert torch.allclose(run(ops.module, (x,)), model(x), atol=1e-5)


def test_cpu_fallback_of_a_pt2e_quantized_model():
    """A PT2E-quantized model with an op NNAPI lacks: the regions pass quint8 tensors
    around the CPU's cumsum and the result is PyTorch's. (Freezing the trace folds the
    weights' dequantize into float constants, so the convolution runs in float.)"""
    from torch_nnapi.quantization import quantize

    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    quantized = quantize(ConvCumsum().eval(), (x,), observer="minmax")
    conversion = convert_with_details(quantized, (x,), fallback=True)
    assert isinstance(conversion, PartitionedConversion)
    assert [c.kind for c in conversion.report.cpu] == ["aten::cumsum"]
    model = conversion.regions[0].result.cx.model
    assert model.operands[model.operations[0].inputs[0]].type.name == "TENSOR_QUANT8_ASYMM"
    with torch.no_grad():
        assert torch.equal(run(conversion.module, (x,)), quantized(x))


def test_exported_control_flow_without_fallback_names_both_ways():
    """NNAPI would run the cond as IF, whose called models PyTorch Mobile's format cannot
    carry: the error names ExecuTorch and the fallback (capture/test_export_flow.py)."""
    class Branch(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))

    with pytest.raises(ConversionError, match=r"to_pte\(.*fallback=True"):
        convert_with_details(Branch(), (torch.randn(4),), capture="export")


def test_probe_records_every_value():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 16, 20)
    program = torch.export.export(zoo.randomize_batchnorm(Heads()), (x,))
    graph = capture_exported(program, (x,), keep_values=True)
    kinds = [n.kind for n in graph.nodes]
    assert "aten::batch_norm" not in kinds  # folded into the convolution
    assert kinds.count("prim::ListUnpack") == 1  # split's Tensor[] result
    tensors = [v for n in graph.nodes for v in n.outputs
               if getattr(v.example, "dtype", None) == "float32"]
    assert tensors and all(v.tensor is not None for v in tensors)


class _WeighsTwo(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + 2 * b


def test_one_tensor_given_for_two_inputs_stays_two_inputs():
    """torch.export merges inputs given the same tensor (the program then reads the first
    for both): a decoder's two empty caches passed as one zero tensor. The capture copies
    such examples, so the converted model reads each input."""
    zeros = torch.zeros(3)
    conversion = convert_with_details(_WeighsTwo(), (zeros, zeros), capture="export")
    a, b = torch.ones(3), torch.full((3,), 5.0)
    torch.testing.assert_close(conversion.module(a, b), a + 2 * b)
