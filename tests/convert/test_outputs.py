"""Output structures (convert/outputs.py): described, taken apart, rebuilt in Python and in
TorchScript (saved, loaded, and in the lite interpreter)."""

from __future__ import annotations

import collections
import io
from typing import NamedTuple

import pytest
import torch
from torch.jit.mobile import _load_for_lite_interpreter

from torch_nnapi.convert.errors import CaptureError
from torch_nnapi.convert.outputs import (
    OutputStructure,
    define_method,
    define_structure_method,
    leaves_of,
    rebuild,
    structure_of,
)

Pair = collections.namedtuple("Pair", "out state")


class State(NamedTuple):
    hidden: torch.Tensor
    cell: torch.Tensor | None


class ModelOutput(collections.OrderedDict):
    """A dict subclass, as Hugging Face's outputs are."""


def _t(value: float) -> torch.Tensor:
    return torch.full((2,), value)


RETURNS = {
    "tensor": _t(0),
    "tuple": (_t(0), _t(1)),
    "lstm": (_t(0), (_t(1), _t(2))),
    "dict": {"logits": _t(0), "hidden": (_t(1), [_t(2), None])},
    "model_output": ModelOutput(last_hidden_state=_t(0), pooler_output=_t(1)),
    "named": Pair(_t(0), State(_t(1), None)),
    "list_of_tuples": [(_t(0), _t(1)), (_t(2), _t(3))],
    "odd_key": {"q'\"\\k": _t(0), "é": [_t(1)]},
}

DESCRIBED = {
    "tensor": "output 0",
    "tuple": "(output 0, output 1)",
    "lstm": "(output 0, (output 1, output 2))",
    "dict": "{'logits': output 0, 'hidden': (output 1, [output 2, None])}",
    "model_output": "ModelOutput{'last_hidden_state': output 0, 'pooler_output': output 1}",
    "named": "Pair(out=output 0, state=State(hidden=output 1, cell=None))",
    "list_of_tuples": "[(output 0, output 1), (output 2, output 3)]",
    "odd_key": "{'q\\'\"\\\\k': output 0, 'é': [output 1]}",
}


def _same(a: object, b: object) -> bool:
    return structure_of(a).same_as(structure_of(b)) and all(
        torch.equal(x, y) for x, y in zip(leaves_of(a), leaves_of(b), strict=True))


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_described_taken_apart_and_rebuilt(name):
    returned = RETURNS[name]
    structure = structure_of(returned)
    assert structure.describe() == DESCRIBED[name]
    leaves = leaves_of(returned)
    assert [float(t[0]) for t in leaves] == list(range(structure.leaf_count))
    assert len(structure.paths()) == structure.leaf_count
    assert OutputStructure.from_json(structure.to_json()) == structure
    assert _same(rebuild(structure, leaves), returned)


def test_paths_name_each_tensor_by_its_place():
    assert structure_of(RETURNS["dict"]).paths() == ["['logits']", "['hidden'][0]",
                                                     "['hidden'][1][0]"]
    assert structure_of(RETURNS["named"]).paths() == [".out", ".state.hidden"]
    assert structure_of(RETURNS["tensor"]).paths() == [""]
    assert not structure_of(RETURNS["tuple"]).nested
    assert structure_of(RETURNS["lstm"]).nested


@pytest.mark.parametrize("returned, message", [
    ((_t(0), 3), "output[1] is an int; a converted model returns tensors"),
    ({"a": {1: _t(0)}}, "output['a'] is a dict with the key 1; a converted model returns"
                        " dicts with string keys"),
    ((_t(0), ()), "output[1] is an empty tuple"),
    ([_t(0), "text"], "output[1] is a str"),
])
def test_what_no_converted_model_returns_is_refused_naming_the_place(returned, message):
    with pytest.raises(CaptureError) as e:
        structure_of(returned)
    assert str(e.value).startswith(message)


def test_a_bad_description_is_a_value_error():
    for text in ("{", '{"kind": "blob"}', '{"kind": "dict", "items": [{"kind": "tensor"}]}'):
        with pytest.raises(ValueError, match="not an output structure"):
            OutputStructure.from_json(text)


def _scripted_with_structure(structure: OutputStructure) -> torch.jit.ScriptModule:
    class Holder(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    module = torch.jit.script(Holder())
    ret = define_structure_method(module, structure)
    define_method(module, f"def nested(self, x: Tensor) -> {ret.annotation}:\n"
                          f"    return self.structure_outputs([x + float(i) for i in"
                          f" range({structure.leaf_count})])\n", ret.names)
    return module


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_torchscript_returns_the_structure_saved_and_in_the_lite_interpreter(name):
    """TorchScript's own forms: a named tuple of the same name and fields, a dict subclass
    as a dict with its keys in order."""
    structure = structure_of(RETURNS[name])
    module = _scripted_with_structure(structure)
    zero = torch.zeros(2)
    expected = rebuild(structure, [zero + i for i in range(structure.leaf_count)])
    assert _same(module.nested(zero), expected)
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    assert _same(torch.jit.load(buffer).nested(zero), expected)
    lite = _load_for_lite_interpreter(io.BytesIO(module._save_to_buffer_for_lite_interpreter()))
    assert _same(lite.run_method("nested", zero), expected)


def test_named_tuples_of_one_name_and_other_fields_coexist():
    """Each structure's named tuple is TorchScript class of its own."""
    first = _scripted_with_structure(structure_of(Pair(_t(0), _t(1))))
    other = collections.namedtuple("Pair", "a b c")  # type: ignore[name-match]  # on purpose
    second = _scripted_with_structure(structure_of(other(_t(0), _t(1), _t(2))))
    assert first.nested(torch.zeros(2))._fields == ("out", "state")
    assert second.nested(torch.zeros(2))._fields == ("a", "b", "c")
