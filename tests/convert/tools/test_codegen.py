"""``trace_to_code``: a captured model as a standalone Python file that reproduces it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_nnapi
from torch_nnapi.convert.tools.codegen import trace_to_code
from torch_nnapi.convert.tools.codegen_ops import CodegenError
from torch_nnapi.quantization import calibrate, convert_prepared, prepare

from .. import zoo
from ..capture.test_export import Heads


def _load(path):
    spec = importlib.util.spec_from_file_location("generated_for_test", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("build", [Heads, lambda: zoo.MobileNetV3Small(num_classes=10)],
                         ids=["heads", "mobilenet_v3_small"])
def test_generated_file_reproduces_the_model(build, tmp_path):
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(build())
    x = torch.randn(1, 3, 32, 32)
    result = torch_nnapi.trace_to_code(model, (x,), str(tmp_path / "net.py"))
    assert result.max_error <= 1e-5 and result.class_name == type(model).__name__
    assert result.weights_path == str(tmp_path / "net.pth")
    generated = _load(result.path).load()
    y = torch.randn(1, 3, 32, 32)  # other inputs than the examples
    with torch.no_grad():
        for a, e in zip(torch.utils._pytree.tree_leaves(generated(y)),
                        torch.utils._pytree.tree_leaves(model(y)), strict=True):
            assert torch.allclose(a.float(), e.float(), atol=1e-5)


def test_generated_code_reads_like_pytorch(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "heads.py"
    trace_to_code(zoo.randomize_batchnorm(Heads()), (torch.randn(1, 3, 16, 20),), str(path))
    text = path.read_text()
    assert "class Heads(nn.Module):" in text and "def load(weights: str = WEIGHTS)" in text
    assert "self.conv_weight = nn.Parameter(torch.empty((8, 3, 3, 3)))" in text
    assert 'self.register_buffer("bn_running_mean", torch.empty((8,)))' in text
    assert "# conv: Conv2d" in text and "F.conv2d(x, self.conv_weight, self.conv_bias" in text
    assert "F.batch_norm(conv2d, self.bn_running_mean, self.bn_running_var" in text
    assert "torch.ops." not in text  # every op of this model has a torch / F spelling
    assert max(len(line) for line in text.splitlines()) <= 100
    # a standalone file: runs in a fresh interpreter without torch_nnapi
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import heads; heads.load()"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_flexible_dimensions_carry_over(tmp_path):
    torch.manual_seed(0)

    class Resize(nn.Module):
        def forward(self, x):
            b, c, h, w = x.shape
            return F.adaptive_avg_pool2d(x, 1).view(b, c) * (h * w)

    x = torch.randn(2, 3, 8, 8)
    dims = {"x": {2: torch.export.Dim.DYNAMIC, 3: torch.export.Dim.DYNAMIC}}
    program = torch.export.export(Resize(), (x,), dynamic_shapes=dims)
    result = trace_to_code(program, (x,), str(tmp_path / "resize.py"))
    assert ".size(2)" in (tmp_path / "resize.py").read_text()
    generated = _load(result.path).load()
    y = torch.randn(2, 3, 5, 7)
    assert torch.allclose(generated(y), Resize()(y))


def test_quantization_stages(tmp_path):
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.MobileNetV2(num_classes=10, width=0.35))
    x = torch.randn(1, 3, 32, 32)
    prepared = prepare(model, (x,), observer="minmax")
    calibrate(prepared, [torch.randn(1, 3, 32, 32) for _ in range(2)])
    result = trace_to_code(prepared, (x,), str(tmp_path / "prepared.py"))
    text = (tmp_path / "prepared.py").read_text()
    assert "MinMaxObserver(" in text
    assert "def bias_qparams(observers: Sequence[ObserverBase])" in text
    assert "DerivedObserverOrFakeQuantize(" in text
    observers = [m for m in _load(result.path).load().modules() if "Observer" in type(m).__name__]
    assert observers and all(o.min_val.numel() for o in observers if hasattr(o, "min_val"))
    quantized = convert_prepared(prepared)
    result = trace_to_code(quantized, (x,), str(tmp_path / "quantized.py"))
    text = (tmp_path / "quantized.py").read_text()
    assert "def quantize_per_tensor(" in text and "def dequantize_per_tensor(" in text
    # the helpers call PT2E's registered ops, which the converter folds (not their arithmetic,
    # whose round it has no lowering for)
    assert "torch.ops.quantized_decomposed.quantize_per_tensor(" in text
    assert "import torch.ao.quantization.fx._decomposed" in text
    assert "torch.round" not in text and result.max_error == 0.0


def derive_bias(observers: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """A derive function annotated with a name the generated file does not import."""
    activation, weight = observers
    scale = (activation.calculate_qparams()[0] * weight.calculate_qparams()[0]).reshape(-1)
    return scale, torch.zeros_like(scale, dtype=torch.int32)


def test_a_derive_function_is_copied_with_its_annotations(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    x = torch.randn(1, 3, 8, 8)
    prepared = prepare(model, (x,), observer="minmax")
    derived = [m for m in prepared.modules() if hasattr(m, "derive_qparams_fn")]
    for m in derived:
        m.derive_qparams_fn = derive_bias
    assert derived
    result = trace_to_code(prepared, (x,), str(tmp_path / "prepared.py"))
    text = (tmp_path / "prepared.py").read_text()
    assert "def derive_bias(observers: Sequence[Any])" in text
    assert _load(result.path).load() is not None


def test_models_it_cannot_write_are_named(tmp_path):
    @torch.library.custom_op("torch_nnapi_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    class Custom(nn.Module):
        def forward(self, x):
            return twice(x) + 1

    with pytest.raises(CodegenError, match=r"cannot express node twice .*test_codegen.py:\d+"
                                           r" \(forward\): torch_nnapi_test::twice is not an"
                                           " ATen operator"):
        trace_to_code(Custom(), (torch.randn(3),), str(tmp_path / "custom.py"))
    with pytest.raises(TypeError, match="takes an nn.Module or an ExportedProgram"):
        trace_to_code(torch.jit.trace(Heads().eval(), torch.randn(1, 3, 8, 8)),
                      (torch.randn(1, 3, 8, 8),), str(tmp_path / "scripted.py"))


class Versioned(nn.Module):
    """Checks the version saved with its state, as torchvision's MNASNet does."""

    _version = 2

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args, **kwargs):
        if local_metadata.get("version") != 2:
            raise ValueError(f"version {local_metadata.get('version')} is not 2")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args, **kwargs)


def test_a_model_that_checks_its_state_version_is_restored(tmp_path):
    """Checking the generated file restores the original's state with its versions."""
    model = Versioned().eval()
    result = trace_to_code(model, (torch.randn(1, 3, 8, 8),), str(tmp_path / "versioned.py"))
    assert result.max_error <= 1e-5
    model.load_state_dict(model.state_dict())  # still loadable afterwards
