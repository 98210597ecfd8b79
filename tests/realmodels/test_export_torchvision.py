"""torchvision's classification models through torch.export, PT2E quantization and
trace_to_code. Over every model: the representative ones are slow (``-m slow``), the others
the sweep (``-m sweep``), both run by .ci/run; one model of each kind runs in the default
suite."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert import quant_policy as policy
from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.tools.check import float_islands
from torch_nnapi.convert.tools.codegen import trace_to_code
from torch_nnapi.quantization import quantize_with_details

from ..convert.harness import compare_in_quanta, dequantized_scale, run
from .checks import nontrivial_weights
from .classification import build, classification_models, require_memory, small_swin_transformer
from .sweep import REPRESENTATIVE_EXPORT, by_cost

FLOAT_TOLERANCE = 1e-4  # relative: float sums over a whole network, in another order


def _outcome(model, x, capture: str) -> tuple:
    """("ok",) when the conversion runs and matches eager PyTorch, else what stopped it."""
    try:
        conversion = convert_with_details(model, (x,), capture=capture)
    except ConversionError as e:
        return ("unsupported", sorted({use.kind for use in e.uses}))
    with torch.no_grad():
        expected = model(x)
    actual = run(conversion.module, (x,))
    error = float((actual - expected).abs().max() / expected.abs().max())
    assert error <= FLOAT_TOLERANCE, f"{capture}: relative error {error:.2g}"
    return ("ok",)


def _export_as_trace(name: str) -> None:
    model, x = build(name)
    # Parameters initialized to one value drawn at random: ViT zero-initializes its head, and
    # an all-zero output would compare nothing (0/0 relative error).
    model = nontrivial_weights(model)
    require_memory(model, 5)
    exported = _outcome(model, x, "export")
    assert exported == _outcome(model, x, "trace")


def test_export_as_trace_mobilenet_v3_small():
    _export_as_trace("mobilenet_v3_small")


@pytest.mark.parametrize("name", by_cost(classification_models(), REPRESENTATIVE_EXPORT))
def test_export_as_trace(name):
    _export_as_trace(name)


def _flexible(name: str) -> None:
    """Height and width as export Dims: one artifact for several resolutions."""
    model, x = build(name)
    size = x.shape[-1]
    dynamic = {"x": {2: torch.export.Dim.DYNAMIC, 3: torch.export.Dim.DYNAMIC}}
    program = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    conversion = convert_with_details(program, (x,))
    assert isinstance(conversion, Conversion)
    assert conversion.lowered.specs[0].flexible == (2, 3)
    for height, width in ((size, size), (size + 16, size - 8)):
        y = torch.randn(1, 3, height, width)
        with torch.no_grad():
            expected = model(y)
        actual = run(conversion.module, (y,))
        assert float((actual - expected).abs().max() / expected.abs().max()) <= FLOAT_TOLERANCE


def test_flexible_resnet18():
    _flexible("resnet18")


@pytest.mark.slow
@pytest.mark.parametrize("version", [1, 2])
def test_flexible_small_swin_transformer(version):
    """Swin's padding, cyclic shift, window partition and mask with export's Dims."""
    model = small_swin_transformer(version)
    x = torch.randn(1, 3, 48, 48)
    dynamic = {"x": {2: torch.export.Dim.DYNAMIC, 3: torch.export.Dim.DYNAMIC}}
    program = torch.export.export(model, (x,), dynamic_shapes=dynamic)
    conversion = convert_with_details(program, (x,), nhwc=True)
    assert isinstance(conversion, Conversion)
    for y in (x, torch.randn(1, 3, 64, 56)):
        with torch.no_grad():
            expected = model(y)
        actual = run(conversion.module, (y,))
        assert float((actual - expected).abs().max() / expected.abs().max()) <= FLOAT_TOLERANCE
    with pytest.raises(Exception, match="Swin shifts its windows only where"):
        run(conversion.module, (torch.randn(1, 3, 32, 32),))  # the second stage: one window


@pytest.mark.slow
@pytest.mark.parametrize("name", ["densenet121", "efficientnet_b0", "mnasnet1_0",
                                  "mobilenet_v2", "mobilenet_v3_large", "regnet_y_400mf",
                                  "resnet34", "resnet50", "resnext50_32x4d", "squeezenet1_1"])
def test_flexible(name):
    _flexible(name)


# ------------------------------------------------------------------------------ quantization

QUANTIZED = ["mobilenet_v2", "mobilenet_v3_large", "resnet18", "resnet50"]
# MobileNetV3's hard swish and hard sigmoid: NNAPI has neither in 8 bits before level 4,
# and no hard sigmoid at all (level 4 runs HARD_SWISH in int8)
FORCED_FLOAT = {3: {"mobilenet_v3_large": {"aten::hardswish_", "aten::hardsigmoid"}},
                4: {"mobilenet_v3_large": {"aten::hardsigmoid"}}}
# The 8-bit operand type of the activations per level: uint8, int8 signed from level 4.
ACTIVATIONS = {3: "TENSOR_QUANT8_ASYMM", 4: "TENSOR_QUANT8_ASYMM_SIGNED"}


# Output quanta NNAPI may differ from PT2E's PyTorch model by. Each layer on its own is
# within one quantum (compare_layers(..., isolated=True)): NNAPI rounds its integer
# arithmetic where PyTorch rounds float, and ResNet-50's 16 residual blocks carry those
# differences to 4 quanta at the output for some images.
QUANTA = {"resnet50": 4}


def _quantized(name: str, level: int, observer: str = "histogram") -> None:
    model, x = build(name)
    g = torch.Generator().manual_seed(1)
    calibration = [torch.randn(x.shape, generator=g) for _ in range(4)]
    details = quantize_with_details(model, (x,), calibration, target_level=level,
                                    observer=observer)
    # level 4: its HARD_SWISH, and a check that the signed model fits it
    target = level if level >= policy.SIGNED_LEVEL else None
    conversion = convert_with_details(details.model, (x,), target_level=target)
    assert isinstance(conversion, Conversion)
    print(f"{name}: quantized in {details.seconds:.1f} s (calibration"
          f" {details.calibration_seconds:.1f} s), converted in {conversion.seconds:.1f} s")
    activations = {o.type.name for o in conversion.model.operands
                   if o.type.name.startswith("TENSOR_QUANT8_ASYMM")}
    assert activations == {ACTIVATIONS[level]}
    islands = float_islands(conversion.model, conversion.lowered.cx.origins, level)
    kinds = {source["kind"] for island in islands for source in island.sources}
    assert kinds == FORCED_FLOAT[level].get(name, set())
    for source in (s for island in islands for s in island.sources):
        assert source["reason"] == policy.float_reason(source["kind"], level)
    with torch.no_grad():
        expected = details.model(x)
    actual = run(conversion.module, (x,))
    quantum = dequantized_scale(conversion)
    stats = compare_in_quanta(actual, expected, quantum)
    print(f"{name}: {stats}")
    assert stats.max_quanta <= QUANTA.get(name, 3), stats
    # the same top-1: NNAPI's top class is one of PyTorch's (with random weights, several
    # classes often share the largest quantized logit)
    top = int(actual.argmax())
    assert float(expected.max() - expected[0, top]) < quantum / 2, stats


def test_quantized_resnet18():
    _quantized("resnet18", 3, "minmax")  # histograms take a while to fill


@pytest.mark.slow
@pytest.mark.parametrize("name", QUANTIZED)
def test_quantized(name):
    _quantized(name, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", QUANTIZED)
def test_quantized_signed(name):
    _quantized(name, 4)


# ------------------------------------------------------------------------------ trace_to_code


def _round_trip(name: str, directory) -> None:
    model, x = build(name)
    require_memory(model, 4)
    result = trace_to_code(model, (x,), str(directory / f"{name}.py"))
    assert result.max_error <= 1e-5


def test_trace_to_code_mobilenet_v3_small(tmp_path):
    _round_trip("mobilenet_v3_small", tmp_path)


@pytest.mark.parametrize("name", by_cost(classification_models(), REPRESENTATIVE_EXPORT))
def test_trace_to_code(name, tmp_path):
    _round_trip(name, tmp_path)
