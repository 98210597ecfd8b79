"""The front-ends return a model's tensors flat and record how they nest: traced modules,
TorchScript modules (scripted, or traced by their author) and exported programs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torch_nnapi.convert.capture.export import capture_exported, export_module
from torch_nnapi.convert.capture.script import capture_script
from torch_nnapi.convert.errors import CaptureError

from ..structured_models import NESTED, Nested


class Scripted(nn.Module):
    """A TorchScript-able model: a dict of a tuple and of a list split() makes (which the
    graph returns as it is, without constructing it)."""

    def forward(self, x: torch.Tensor) -> dict[str, tuple[torch.Tensor, list[torch.Tensor]]]:
        return {"parts": (x * 2, list(torch.split(x, 2, 1)))}


def _returned_flat(graph) -> list:
    out = graph.output
    producer = next((n for n in graph.nodes if out in n.outputs), None)
    assert producer is not None and producer.kind == "prim::TupleConstruct"
    return producer.inputs


def test_a_traced_model_returns_its_tensors_flat():
    x = torch.randn(2, 4)
    captured = capture_script(Nested().eval(), (x,))
    graph = captured.graph
    assert graph.structure is not None and graph.structure.describe() == NESTED
    assert len(_returned_flat(graph)) == 5
    assert [v.name for v in graph.inputs] == ["x"]  # named after forward's parameter
    locations = [n.location for n in graph.nodes]
    assert any(loc.endswith("(forward), module fc") for loc in locations), locations
    assert not any("flat_outputs_model" in loc for loc in locations)  # the wrapper's scope


def test_a_scripted_model_returning_a_dict_is_flattened_and_keeps_its_graph():
    x = torch.randn(2, 4)
    frozen = torch.jit.freeze(torch.jit.script(Scripted().eval()))
    captured = capture_script(frozen, (x,))
    structure = captured.graph.structure
    assert structure is not None
    assert structure.describe() == "{'parts': (output 0, [output 1, output 2])}"
    assert len(_returned_flat(captured.graph)) == 3
    kinds = {n.kind for n in captured.graph.nodes}
    assert "prim::DictConstruct" not in kinds
    assert isinstance(frozen(x), dict)  # the caller's module still returns its dict


def test_an_exported_program_returns_its_tensors_flat():
    x = torch.randn(2, 4)
    program = export_module(Nested(), (x,))
    graph = capture_exported(program, (x,))
    assert graph.structure is not None and graph.structure.describe() == NESTED
    assert len(_returned_flat(graph)) == 5


class ReturnsNumber(nn.Module):
    def forward(self, x):
        return x * 2, 3


class ReturnsNothing(nn.Module):
    def forward(self, x):
        return None


@pytest.mark.parametrize("model, message", [
    (ReturnsNumber(), "output[1] is an int; a converted model returns tensors"),
    (ReturnsNothing(), "the model returns no tensor (None)"),
])
def test_what_a_converted_model_cannot_return_is_one_line(model, message):
    with pytest.raises(CaptureError) as e:
        capture_script(model, (torch.randn(2, 4),))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
