"""How a model's outputs nest, across a .pte (ExecuTorch returns them flat).

``to_pte`` records the structure of the exported program's outputs (dicts, named tuples,
nested tuples and lists, ``None``) as JSON in the .pte's constant method
``torch_nnapi_outputs`` and gives ExecuTorch the program with flat outputs (its serializer
cannot write a named tuple's spec); the run helpers nest the tensors ExecuTorch returns
again. The JSON is the converter's own description of output structures (``kind``,
``items``, ``keys``, ``name``), so the shared output-structure module can take over here.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import json
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils._pytree import TreeSpec, tree_structure

OUTPUTS_METHOD = "torch_nnapi_outputs"  # the .pte's constant method holding the JSON

Structure = dict[str, Any]  # {"kind": ..., "items": [...], "keys": [...], "name": ...}
_END = object()


def structure_of(spec: TreeSpec) -> Structure:
    """The structure a pytree spec describes; ValueError naming a container that is not a
    tuple, list, dict (with string keys), named tuple or None."""
    if spec.is_leaf():
        return {"kind": "tensor"}
    kind = spec.type
    items = [structure_of(child) for child in spec.children()]
    if kind is type(None):
        return {"kind": "none"}
    named = spec.context if kind is collections.namedtuple else kind  # pytree's or a class
    if isinstance(named, type) and issubclass(named, tuple) and hasattr(named, "_fields"):
        return {"kind": "named", "items": items, "keys": list(named._fields),
                "name": named.__name__}
    if kind in (tuple, list):
        return {"kind": kind.__name__, "items": items}
    if isinstance(kind, type) and issubclass(kind, dict) and isinstance(spec.context, list) \
            and all(isinstance(k, str) for k in spec.context):
        name = "" if kind in (dict, collections.OrderedDict) else kind.__name__
        return {"kind": "dict", "items": items, "keys": list(spec.context), "name": name}
    raise ValueError(f"the model returns a {getattr(kind, '__name__', kind)}; a .pte returns"
                     " tensors in tuples, lists, dicts with string keys and named tuples")


def rebuild(structure: Structure, leaves: Sequence[Any]) -> Any:
    """``leaves`` (ExecuTorch's flat outputs, in order) nested as ``structure`` says; a
    named tuple comes back as a named tuple of the same name and fields, a dict subclass as
    a dict."""
    it = iter(leaves)
    result = _build(structure, it)
    if next(it, _END) is not _END:
        raise ValueError(f"the program returned {len(leaves)} values, more than its output"
                         " structure holds")
    return result


def _build(s: Structure, leaves: Iterator[Any]) -> Any:
    kind = s["kind"]
    if kind == "tensor":
        try:
            return next(leaves)
        except StopIteration:
            raise ValueError("the program returned fewer values than its output structure"
                             " holds") from None
    if kind == "none":
        return None
    items = [_build(item, leaves) for item in s.get("items", [])]
    if kind == "dict":
        return dict(zip(s["keys"], items, strict=True))
    if kind == "named":
        return collections.namedtuple(s["name"], s["keys"])(*items)  # noqa: PYI024
    return items if kind == "list" else tuple(items)


def leaf_paths(structure: Structure | None, count: int) -> list[str]:
    """A name for each of the ``count`` flat outputs: its place in the structure
    (``['logits']``, ``[1].state``), else ``output <i>``."""
    if structure is None or structure["kind"] == "tensor":
        return [f"output {i}" for i in range(count)]
    found: list[str] = []

    def walk(s: Structure, path: str) -> None:
        if s["kind"] == "tensor":
            found.append(path)
        for i, item in enumerate(s.get("items", [])):
            step = f".{s['keys'][i]}" if s["kind"] == "named" else \
                f"[{s['keys'][i]!r}]" if s["kind"] == "dict" else f"[{i}]"
            walk(item, path + step)

    walk(structure, "")
    return found if len(found) == count else [f"output {i}" for i in range(count)]


def read_structure(text: str) -> Structure:
    """The structure :func:`to_json` wrote; ValueError when ``text`` is not one."""
    try:
        found = json.loads(text)
        _check(found)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"not an output structure: {e}") from None
    return dict(found)


def _check(s: Any) -> None:
    if not isinstance(s, dict) or s.get("kind") not in ("tensor", "none", "tuple", "list",
                                                         "dict", "named"):
        raise ValueError(f"unknown entry {s!r}")
    items = s.get("items", [])
    if s["kind"] in ("dict", "named") and len(s["keys"]) != len(items):
        raise ValueError(f"a {s['kind']} with {len(s['keys'])} keys for {len(items)} items")
    for item in items:
        _check(item)


def to_json(structure: Structure) -> str:
    return json.dumps(structure, separators=(",", ":"))


def with_flat_outputs(program: torch.export.ExportedProgram
                      ) -> tuple[torch.export.ExportedProgram, Structure]:
    """The program returning its outputs as one flat tuple (the graph's output node is flat
    already: only the spec that nests them changes), and the structure it had."""
    entry = program.module_call_graph[0]
    signature = entry.signature
    if signature is None:
        return program, {"kind": "tuple", "items": [{"kind": "tensor"}] * len(
            program.graph_signature.user_outputs)}
    structure = structure_of(signature.out_spec)
    flat_spec = tree_structure(tuple(range(signature.out_spec.num_leaves)))
    flat_entry = dataclasses.replace(entry, signature=dataclasses.replace(
        signature, out_spec=flat_spec))
    # a shallow copy: a new module for the graph would take the graph from the caller's
    # program (a graph belongs to one module), and a deep copy renames placeholders such as
    # ``input``, which the signature names
    flat = copy.copy(program)
    flat._module_call_graph = [flat_entry, *program.module_call_graph[1:]]
    return flat, structure
