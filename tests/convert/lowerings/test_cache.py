"""Cache writes at a position (``index_copy`` in lowerings/index.py, builder/gather.py's
``copy_at_position``): one position, a constant or a tensor the model takes."""

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


def test_index_copy_of_several_positions_is_refused():
    model = Fn(lambda c, p, s: c.index_copy(0, p, s))
    with pytest.raises(ConversionError, match="more than one position"):
        convert_with_details(model, (torch.randn(4, 3), torch.tensor([0, 2]),
                                     torch.randn(2, 3)))


def test_a_gpt_step_writing_its_cache_by_index_copy_generates_as_eager():
    torch.manual_seed(0)
    step = cm.TinyGptStep(index_copy=True).eval().requires_grad_(False)
    keys = torch.zeros(step.cache_shape())
    conversion = convert_with_details(step, (torch.tensor([5]), torch.tensor([3]), keys, keys),
                                      nhwc=False)
    assert isinstance(conversion, Conversion)
    prompt = torch.tensor([2, 8, 1])
    expected = generate(step, prompt, 16, eos_id=-1, keys=keys, values=keys)
    actual = generate(conversion.module, prompt, 16, eos_id=-1, keys=keys, values=keys)
    assert actual.tolist() == expected.tolist()
