"""Cache writes at a position (``index_copy``, ``index_put_`` and slice assignment in
lowerings/index.py, builder/gather.py's ``copy_at_position`` and ``put_at_position``): one
position, a constant or a tensor the model takes."""

from __future__ import annotations

import pytest
import torch

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.torchscript.generate import generate

from .. import control_models as cm
from ..harness import Fn, check, nnapi_ops


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_copy_at_a_position_the_model_takes(dim):
    cache = torch.randn(3, 5, 4)
    shape = list(cache.shape)
    shape[dim] = 1
    source = torch.randn(shape)
    model = Fn(lambda c, p, s: c.index_copy(dim, p, s) * 1.0)
    position = torch.tensor([2])
    conversion, _ = check(model, (cache, position, source),
                          run_inputs=[(cache, torch.tensor([p]), source) for p in (0, 2, 4)
                                      if p < cache.shape[dim]])
    assert {"EQUAL", "SELECT"} <= set(nnapi_ops(conversion))


class SliceAssignment(torch.nn.Module):
    """``cache[:, :, pos] = k`` at a position the model takes."""

    def forward(self, cache: torch.Tensor, position: torch.Tensor, k: torch.Tensor
                ) -> torch.Tensor:
        cache = cache.clone()
        cache[:, :, position] = k
        return cache * 1.0


def test_slice_assignment_at_a_position_the_model_takes():
    """A one-element position (a 0-D one is traced as a Python number: aten::Int)."""
    cache = torch.randn(2, 3, 6, 4)
    source = torch.randn(2, 3, 1, 4)
    positions = [torch.tensor([p]) for p in (0, 3, 5, -1, -6)]
    conversion, worst = check(SliceAssignment(), (cache, positions[1], source),
                              run_inputs=[(cache, p, source) for p in positions])
    assert worst == 0.0
    assert "EQUAL" in nnapi_ops(conversion) and "GATHER" not in nnapi_ops(conversion)


@pytest.mark.parametrize("value", ["tensor", "number"])
def test_index_put_at_a_position_the_model_takes(value):
    row = torch.randn(4)
    model = Fn(lambda c, p, v: c.clone().index_put_((p,), v if value == "tensor" else
                                                     torch.tensor(2.5)) * 1.0)
    cache = torch.randn(6, 4)
    conversion, worst = check(model, (cache, torch.tensor([3]), row),
                              run_inputs=[(cache, torch.tensor([p]), row) for p in (0, 5, -2)])
    assert worst == 0.0 and "EQUAL" in nnapi_ops(conversion)


def test_index_put_at_several_computed_positions_or_accumulating_is_refused():
    with pytest.raises(ConversionError, match="more than one position"):
        convert_with_details(Fn(lambda c, p, v: c.index_put((p,), v) * 1.0),
                             (torch.randn(6, 4), torch.tensor([0, 2]), torch.randn(4)))
    with pytest.raises(ConversionError, match="accumulating"):
        convert_with_details(Fn(lambda c, p, v: c.index_put((p,), v, accumulate=True) * 1.0),
                             (torch.randn(6, 4), torch.tensor([1]), torch.randn(4)))


def test_index_copy_of_several_positions_is_refused():
    model = Fn(lambda c, p, s: c.index_copy(0, p, s))
    with pytest.raises(ConversionError, match="more than one position"):
        convert_with_details(model, (torch.randn(4, 3), torch.tensor([0, 2]),
                                     torch.randn(2, 3)))


@pytest.mark.parametrize("write", ["index_copy", "assign"])
def test_a_gpt_step_writing_its_cache_at_the_position_generates_as_eager(write):
    torch.manual_seed(0)
    step = cm.TinyGptStep(**{write: True}).eval().requires_grad_(False)
    keys = torch.zeros(step.cache_shape())
    conversion = convert_with_details(step, (torch.tensor([5]), torch.tensor([3]), keys, keys),
                                      nhwc=False)
    assert isinstance(conversion, Conversion)
    prompt = torch.tensor([2, 8, 1])
    expected = generate(step, prompt, 16, eos_id=-1, keys=keys, values=keys)
    actual = generate(conversion.module, prompt, 16, eos_id=-1, keys=keys, values=keys)
    assert actual.tolist() == expected.tolist()
