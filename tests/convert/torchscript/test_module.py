"""The converted module (convert/torchscript/module.py): saving after running, and the checks
that keep a module from computing on inputs or weights it was not converted for."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn as nn

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.tools.host import run_on_host

from ..harness import assert_close, torch_runtime_available

needs_runtime = pytest.mark.skipif(not torch_runtime_available(),
                                   reason="needs torch-nnapi's libneuralnetworks.so (capi)")


class Affine(nn.Module):
    """Weights large enough to live in the module's weight tensors."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))


class QuantizedRelu(nn.Module):
    def forward(self, q):
        return torch.relu(q)


@needs_runtime
def test_a_module_that_has_run_saves_without_a_reset(tmp_path):
    """The README's first snippet: run, then save for the lite interpreter (PyTorch cannot
    serialize the compilation the run made; the module leaves it out)."""
    from torch.jit.mobile import _load_for_lite_interpreter

    x = torch.randn(2, 16)
    model = Affine().eval()
    module = convert_with_details(model, (x,)).module
    expected = model(x)
    assert_close(module(x), expected)
    module._save_for_lite_interpreter(str(tmp_path / "m.ptl"))
    module.save(str(tmp_path / "m.pt"))
    torch.jit.save(module, io.BytesIO())
    assert_close(_load_for_lite_interpreter(str(tmp_path / "m.ptl"))(x), expected)
    loaded = torch.jit.load(str(tmp_path / "m.pt"))
    assert_close(loaded(x), expected)
    loaded.save(str(tmp_path / "again.pt"))  # a loaded module that has run saves too
    assert_close(torch.jit.load(str(tmp_path / "again.pt"))(x), expected)
    assert_close(module(x), expected)  # and the original still runs after saving


def test_weights_replaced_by_another_dtype_or_shape_are_refused():
    x = torch.randn(2, 16)
    module = convert_with_details(Affine().eval(), (x,)).module
    weights = list(module.nnapi.weights)
    assert weights and weights[0].dtype == torch.float32
    module.nnapi.weights = [weights[0].view(torch.int32)] + weights[1:]
    with pytest.raises(Exception, match="weight 0 is int32, the model was converted with"
                                        " float32"):
        module.nnapi.check_weights()
    module.nnapi.weights = [weights[0][:1]] + weights[1:]
    with pytest.raises(Exception, match=r"weight 0 has shape \[1"):
        module.nnapi.check_weights()


@needs_runtime
def test_replaced_weights_are_refused_before_compiling():
    x = torch.randn(2, 16)
    module = convert_with_details(Affine().eval(), (x,)).module
    weights = list(module.nnapi.weights)
    module.nnapi.weights = [weights[0].view(torch.int32)] + weights[1:]
    with pytest.raises(Exception, match="weight 0 is int32"):
        module(x)


def test_an_input_quantized_at_another_scale_is_refused():
    q = torch.quantize_per_tensor(torch.randn(1, 4), 0.05, 128, torch.quint8)
    module = convert_with_details(QuantizedRelu(), (q,)).module
    assert torch.equal(run_on_host(module, q).int_repr(), torch.relu(q).int_repr())
    other = torch.quantize_per_tensor(torch.randn(1, 4), 0.1, 128, torch.quint8)
    with pytest.raises(Exception, match="input 0 is quantized with scale 0.1 and zero point"
                                        " 128, the model takes scale 0.05"):
        run_on_host(module, other)
    shifted = torch.quantize_per_tensor(torch.randn(1, 4), 0.05, 100, torch.quint8)
    with pytest.raises(Exception, match="zero point 100"):
        run_on_host(module, shifted)


def test_an_input_of_another_dtype_is_refused():
    x = torch.randn(2, 16)
    module = convert_with_details(Affine().eval(), (x,)).module
    with pytest.raises(Exception, match="input 0 is float64, the model takes float32"):
        run_on_host(module, x.double())
    q = torch.quantize_per_tensor(x, 0.1, 128, torch.quint8)
    with pytest.raises(Exception, match="input 0 is quint8, the model takes float32"):
        run_on_host(module, q)


def test_int64_inputs_also_take_int32():
    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(10, 4)

        def forward(self, ids):
            return self.table(ids)

    ids = torch.tensor([[1, 2, 3]])
    model = Embed().eval()
    module = convert_with_details(model, (ids,)).module
    assert_close(run_on_host(module, ids.int()), model(ids))
