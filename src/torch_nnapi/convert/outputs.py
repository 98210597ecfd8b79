"""Model outputs as users write them: one description of how a model's tensors nest.

Models return more than a tensor or a flat tuple: a dict (every Hugging Face model returns a
``ModelOutput``, a dict subclass), ``nn.LSTM``'s ``out, (h, c)``, named tuples, lists of
tuples, ``None`` where an optional output is off. The converter works on the tensors alone:
each front-end flattens the model's return into its tensors, in order (depth first, dicts
and named tuples in their key order, ``None`` dropped), and records an
:class:`OutputStructure`; each back-end rebuilds it around its outputs. This module is the
one place that knows the structures:

* :func:`structure_of` describes a returned object, refusing, in one line naming where,
  what no converted model can return (a number, a string, a class of the model's own);
* :func:`leaves_of` / :func:`rebuild` take an object apart into its tensors and put them
  back together (in Python: for tools, and a back-end running outside TorchScript);
* :func:`torchscript_return` writes the TorchScript code that builds the structure from a
  ``List[Tensor]`` (:func:`define_method` adds it to a module), so a saved module returns
  it too, in the full and the lite interpreter.

TorchScript has no classes of the user's: a named tuple comes back as TorchScript's named
tuple of the same name and fields, and a dict subclass (``ModelOutput``) as a dict with the
same keys, in order. Its lists and dicts hold one type: those whose items differ are typed
``Any``.
"""

from __future__ import annotations

import builtins
import collections
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, TypeGuard  # noqa: UP035

import torch

from .errors import CaptureError

TENSOR, NONE, TUPLE, LIST, DICT, NAMED = "tensor", "none", "tuple", "list", "dict", "named"


@dataclass(frozen=True)
class OutputStructure:
    """How a model's output tensors nest: a tensor, ``None``, or a container of structures
    (``keys``: a dict's keys or a named tuple's fields; ``name``: a named tuple's class, or
    a dict subclass's such as ``BaseModelOutput``, for the reader)."""

    kind: str
    items: tuple[OutputStructure, ...] = ()
    keys: tuple[str, ...] = ()
    name: str = ""

    @staticmethod
    def flat(count: int, container: str = TUPLE) -> OutputStructure:
        """``count`` tensors in a tuple or list (one tensor alone when ``container`` is
        TENSOR)."""
        if container == TENSOR:
            return OutputStructure(TENSOR)
        return OutputStructure(container, (OutputStructure(TENSOR),) * count)

    @property
    def leaf_count(self) -> int:
        if self.kind == TENSOR:
            return 1
        return sum(item.leaf_count for item in self.items)

    def paths(self) -> list[str]:
        """Each tensor's place, in order: ``['logits']``, ``[1][0]``, ``.state``; "" for
        a model returning one tensor."""
        if self.kind == TENSOR:
            return [""]
        found = []
        for i, item in enumerate(self.items):
            step = f".{self.keys[i]}" if self.kind == NAMED else \
                f"[{self.keys[i]!r}]" if self.kind == DICT else f"[{i}]"
            found += [step + rest for rest in item.paths()]
        return found

    @property
    def nested(self) -> bool:
        """More than one tensor or a flat tuple of them: its tensors are named by path."""
        return self.kind != TENSOR and not (
            self.kind == TUPLE and all(item.kind == TENSOR for item in self.items))

    def describe(self) -> str:
        """The structure as Python would print it, each tensor ``output <n>``."""
        counter = itertools.count()
        return self._describe(lambda: f"output {next(counter)}")

    def _describe(self, leaf: Callable[[], str]) -> str:
        if self.kind == TENSOR:
            return leaf()
        if self.kind == NONE:
            return "None"
        parts = [item._describe(leaf) for item in self.items]
        if self.kind == DICT:
            inner = ", ".join(f"{k!r}: {p}" for k, p in zip(self.keys, parts, strict=True))
            return f"{self.name}{{{inner}}}" if self.name else f"{{{inner}}}"
        if self.kind == NAMED:
            inner = ", ".join(f"{k}={p}" for k, p in zip(self.keys, parts, strict=True))
            return f"{self.name}({inner})"
        if self.kind == LIST:
            return f"[{', '.join(parts)}]"
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"

    def same_as(self, other: OutputStructure) -> bool:
        """The same nesting, keys and fields; a dict subclass's name aside (TorchScript
        returns ``ModelOutput`` as a dict)."""
        return self.kind == other.kind and self.keys == other.keys and (
            self.kind != NAMED or self.name == other.name) and len(self.items) == len(
            other.items) and all(a.same_as(b) for a, b in zip(self.items, other.items,
                                                               strict=True))

    def to_json(self) -> str:
        return json.dumps(self._as_dict(), separators=(",", ":"))

    def _as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"kind": self.kind}
        if self.items:
            entry["items"] = [item._as_dict() for item in self.items]
        if self.keys:
            entry["keys"] = list(self.keys)
        if self.name:
            entry["name"] = self.name
        return entry

    @staticmethod
    def from_json(text: str) -> OutputStructure:
        """The structure :meth:`to_json` wrote; ValueError when ``text`` is not one."""
        try:
            return _from_dict(json.loads(text))
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"not an output structure: {e}") from None


def _from_dict(entry: dict[str, Any]) -> OutputStructure:
    kind = entry["kind"]
    if kind not in (TENSOR, NONE, TUPLE, LIST, DICT, NAMED):
        raise ValueError(f"unknown kind {kind!r}")
    items = tuple(_from_dict(item) for item in entry.get("items", []))
    keys = tuple(str(k) for k in entry.get("keys", []))
    if kind in (DICT, NAMED) and len(keys) != len(items):
        raise ValueError(f"a {kind} with {len(keys)} keys for {len(items)} items")
    return OutputStructure(kind, items, keys, str(entry.get("name", "")))


# ------------------------------------------------------------------------------ Python


def is_named_tuple(obj: object) -> TypeGuard[tuple[Any, ...]]:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def structure_of(obj: object, where: str = "output") -> OutputStructure:
    """What ``obj`` (a model's return) is made of; CaptureError naming the place of
    anything but tensors, ``None``, tuples, lists, named tuples and dicts with string
    keys."""
    if isinstance(obj, torch.Tensor):
        return OutputStructure(TENSOR)
    if obj is None:
        return OutputStructure(NONE)
    if is_named_tuple(obj):
        fields: tuple[str, ...] = tuple(getattr(type(obj), "_fields"))  # noqa: B009 - untyped
        items = tuple(structure_of(x, f"{where}.{f}") for f, x in zip(fields, obj,
                                                                       strict=True))
        return OutputStructure(NAMED, items, fields, type(obj).__name__)
    if isinstance(obj, (tuple, list)):
        if isinstance(obj, tuple) and not obj:
            raise CaptureError(f"{where} is an empty tuple; a converted model returns"
                               " tensors (in tuples, lists, dicts and named tuples)")
        items = tuple(structure_of(x, f"{where}[{i}]") for i, x in enumerate(obj))
        return OutputStructure(TUPLE if isinstance(obj, tuple) else LIST, items)
    if isinstance(obj, Mapping):
        keys = tuple(obj.keys())
        for k in keys:
            if not isinstance(k, str):
                raise CaptureError(f"{where} is a dict with the key {k!r}; a converted model"
                                   " returns dicts with string keys")
        items = tuple(structure_of(obj[k], f"{where}[{k!r}]") for k in keys)
        name = "" if type(obj) in (dict, collections.OrderedDict) else type(obj).__name__
        return OutputStructure(DICT, items, keys, name)
    raise CaptureError(f"{where} is {_a(type(obj).__name__)}; a converted model returns"
                       " tensors (in tuples, lists, dicts and named tuples, with None)")


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def leaves_of(obj: object) -> list[torch.Tensor]:
    """The tensors of a returned object, in the order its structure numbers them."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if obj is None:
        return []
    if isinstance(obj, Mapping):
        return [t for k in obj for t in leaves_of(obj[k])]
    if isinstance(obj, (tuple, list)):
        return [t for x in obj for t in leaves_of(x)]
    raise CaptureError(f"a model output holds {_a(type(obj).__name__)}, not a tensor")


def rebuild(structure: OutputStructure, leaves: Sequence[torch.Tensor]) -> object:
    """``leaves`` (in order) nested as ``structure`` says, as TorchScript returns it: a
    named tuple of the same name and fields, a dict subclass as a dict."""
    if len(leaves) != structure.leaf_count:
        raise ValueError(f"{len(leaves)} tensors for a structure of {structure.leaf_count}")
    it = iter(leaves)
    return _rebuild(structure, lambda: next(it))


def _rebuild(structure: OutputStructure, leaf: Callable[[], torch.Tensor]) -> object:
    if structure.kind == TENSOR:
        return leaf()
    if structure.kind == NONE:
        return None
    items: list[Any] = [_rebuild(item, leaf) for item in structure.items]
    if structure.kind == DICT:
        return dict(zip(structure.keys, items, strict=True))
    if structure.kind == NAMED:
        return collections.namedtuple(structure.name, structure.keys)(*items)  # noqa: PYI024
    return items if structure.kind == LIST else tuple(items)


# ------------------------------------------------------------------------------ TorchScript


@dataclass
class TorchScriptReturn:
    """TorchScript code building a structure from a ``List[Tensor]``: ``expression`` of
    type ``annotation``, with ``names`` (types and named tuple classes) its code refers to
    (resolved by :func:`define_method`)."""

    annotation: str
    expression: str
    names: dict[str, object]


_CLASSES = itertools.count()


def torchscript_return(structure: OutputStructure, leaves: str = "outs") -> TorchScriptReturn:
    """The expression building ``structure`` from the tensors ``leaves[0]``, ``leaves[1]``...
    Lists and dicts are annotated (their literals would otherwise be typed by their first
    item); named tuples are classes made here, with the same name and fields."""
    writer = _Writer(leaves)
    expression = writer.expression(structure)
    writer.names["Returned"] = writer.python_type(structure)
    return TorchScriptReturn("Returned", expression, writer.names)


class _Writer:
    def __init__(self, leaves: str) -> None:
        self.leaves = leaves
        self.count = itertools.count()
        self.names: dict[str, object] = {"annotate": torch.jit.annotate}
        self.types: dict[OutputStructure, object] = {}

    def expression(self, s: OutputStructure) -> str:
        if s.kind == TENSOR:
            return f"{self.leaves}[{next(self.count)}]"
        if s.kind == NONE:
            return "None"
        parts = [self.expression(item) for item in s.items]
        if s.kind == TUPLE:
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        name = f"T{len(self.names) - 1}"
        self.names[name] = self.python_type(s)
        if s.kind == NAMED:
            return f"{name}({', '.join(parts)})"
        if s.kind == LIST:
            return f"annotate({name}, [{', '.join(parts)}])"
        pairs = ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {p}"
                          for k, p in zip(s.keys, parts, strict=True))
        return f"annotate({name}, {{{pairs}}})"

    def python_type(self, s: OutputStructure) -> object:
        """The Python annotation TorchScript reads for ``s`` (typing's generic aliases need
        their arguments as a tuple, which mypy cannot follow)."""
        found = self.types.get(s)
        if found is not None:
            return found
        t: object
        if s.kind == TENSOR:
            t = torch.Tensor
        elif s.kind == NONE:
            t = type(None)
        elif s.kind == TUPLE:
            t = Tuple[tuple(self.python_type(i) for i in s.items)]  # noqa: UP006
        elif s.kind == NAMED:
            t = self._named_tuple(s)
        elif s.kind == LIST:
            t = List[self._common(s.items)]  # type: ignore[misc]  # noqa: UP006
        else:
            t = Dict[str, self._common(s.items)]  # type: ignore[misc]  # noqa: UP006
        self.types[s] = t
        return t

    def _common(self, items: Sequence[OutputStructure]) -> object:
        """One type for a list's or dict's items: theirs when they agree, Optional of it
        with None beside it, else Any."""
        found = list(dict.fromkeys(self.python_type(i) for i in items))
        if not found:
            return torch.Tensor
        if len(found) == 2 and type(None) in found:
            other = next(t for t in found if t is not type(None))
            return Any if other is Any else Optional[other]  # noqa: UP045
        return found[0] if len(found) == 1 else Any

    def _named_tuple(self, s: OutputStructure) -> type:
        fields = [(k, self.python_type(i)) for k, i in zip(s.keys, s.items, strict=True)]
        cls: type = NamedTuple(s.name, fields)  # type: ignore[misc]  # a functional NamedTuple
        # TorchScript knows a class by its qualified name: one of its own per structure
        cls.__module__ = f"torch_nnapi.outputs.n{next(_CLASSES)}"
        cls.__qualname__ = s.name
        return cls


def define_method(module: torch.jit.ScriptModule, source: str, names: Mapping[str, object]
                  ) -> None:
    """Adds the method ``source`` to ``module``, resolving ``names`` (the types and classes
    of a :class:`TorchScriptReturn`) and Python's builtins as TorchScript reads the code."""
    def resolve(name: str) -> object:
        return names[name] if name in names else getattr(builtins, name, None)

    module._c._define(module._concrete_type, source, resolve)


STRUCTURE_METHOD = "structure_outputs"


def define_structure_method(module: torch.jit.ScriptModule, structure: OutputStructure
                            ) -> TorchScriptReturn:
    """Adds ``structure_outputs(outs: List[Tensor])``, returning them nested as
    ``structure``; its return annotation and names serve the methods calling it."""
    ret = torchscript_return(structure)
    define_method(module, f"def {STRUCTURE_METHOD}(self, outs: List[Tensor]) ->"
                          f" {ret.annotation}:\n    return {ret.expression}\n", ret.names)
    return ret


__all__ = ["DICT", "LIST", "NAMED", "NONE", "STRUCTURE_METHOD", "TENSOR", "TUPLE",
           "OutputStructure", "TorchScriptReturn", "define_method", "define_structure_method",
           "is_named_tuple", "leaves_of", "rebuild", "structure_of", "torchscript_return"]
