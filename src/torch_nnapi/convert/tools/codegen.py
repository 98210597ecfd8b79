"""``torch_nnapi.trace_to_code``: a captured model as one standalone, editable Python file.

The model is captured with ``torch.export`` (or taken as exported, or as PT2E prepared or
converted it) and written as an ``nn.Module`` whose ``forward`` is the graph, one line per
node, in ``torch`` / ``torch.nn.functional`` calls (``codegen_ops.py``), commented with the
submodule each block comes from. Parameters and buffers become attributes named after their
place in the original (``features.0.0.weight`` -> ``self.features_0_0_weight``), saved in a
weights file beside the code (``torch.save`` of the state dict) that ``load()`` reads.
Observers of a model prepared for quantization become submodules of their own classes, so a
user can read, edit and recalibrate exactly what will be quantized and converted.

After writing, the file is imported, its weights loaded, and its outputs compared with the
original's on the example inputs: a mismatch above ``tolerance`` is an error.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import keyword
import os
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard

import torch
from torch.utils._pytree import TreeSpec

from ...nnapi.errors import counted
from ..capture.export import export_module, get_attribute, is_exported
from ..capture.frontend import example_inputs_of
from ..errors import CaptureError
from ..outputs import structure_of
from .codegen_ops import QUANT_HELPERS, QUANT_OPS_IMPORT, CodegenError, literal, render_call

TOLERANCE = 1e-5


@dataclass
class GeneratedCode:
    path: str  # the Python file
    weights_path: str  # its weights (torch.save of the state dict)
    class_name: str
    max_error: float  # largest absolute difference from the original on the examples


def trace_to_code(model: torch.nn.Module | torch.export.ExportedProgram,
                  example_inputs: object = None, path: str = "model.py", *,
                  class_name: str | None = None, weights_path: str | None = None,
                  tolerance: float = TOLERANCE) -> GeneratedCode:
    """Writes ``model`` (an nn.Module, exported here; an ExportedProgram; or a GraphModule
    from torch.export or PT2E's prepare/convert) as the Python file ``path`` and its weights
    (``weights_path``, default: ``path`` with ``.pth``); checks that the file reproduces the
    model's outputs on the example inputs within ``tolerance``. Raises CodegenError (a
    ValueError) naming a node that cannot be written, or reporting the mismatch."""
    examples = example_inputs_of(model, example_inputs)
    graph_module = _graph_module(model, examples)
    name = class_name or _class_name(model)
    weights_path = weights_path or os.path.splitext(path)[0] + ".pth"
    writer = _Writer(graph_module, name, os.path.basename(weights_path))
    source = writer.source()
    with open(path, "w") as f:
        f.write(source)
    torch.save(writer.state, weights_path)
    error = _verify(model, examples, path, weights_path)
    if not error <= tolerance:
        raise CodegenError(f"the generated {path} differs from the model by {error:g} (more"
                           f" than {tolerance:g}) on the example inputs")
    return GeneratedCode(path, weights_path, name, error)


def _graph_module(model: object, examples: tuple[torch.Tensor, ...]) -> torch.fx.GraphModule:
    if isinstance(model, torch.export.ExportedProgram):
        return model.module()
    if is_exported(model) and isinstance(model, torch.fx.GraphModule):
        return model
    if isinstance(model, torch.jit.ScriptModule) or not isinstance(model, torch.nn.Module):
        raise TypeError(f"trace_to_code takes an nn.Module or an ExportedProgram, got"
                        f" {type(model).__name__}")
    return export_module(model, examples).module()


def _class_name(model: object) -> str:
    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.fx.GraphModule):
        return type(model).__name__
    return "CapturedModel"


# ------------------------------------------------------------------------------ writing


class _Writer:
    def __init__(self, module: torch.fx.GraphModule, class_name: str, weights_name: str):
        self.module = module
        self.class_name = class_name
        self.weights_name = weights_name
        self.names: dict[torch.fx.Node, str] = {}  # node -> its Python expression
        self.used: set[str] = set()
        self.state: dict[str, torch.Tensor] = {}
        self.attributes: list[str] = []  # __init__ lines for parameters and buffers
        self.submodules: dict[str, torch.nn.Module] = {}  # attribute -> observer module
        self.helpers: set[str] = set()
        self.imports: set[str] = set()
        self.named_tuples: dict[str, tuple[str, ...]] = {}  # returned: name -> fields

    def source(self) -> str:
        body = self._forward()
        init = self.attributes + self._observer_lines()
        docstring = (f'"""{self.class_name}, captured with torch.export and written by'
                     f" torch_nnapi.trace_to_code.\n\nWeights: {self.weights_name} beside this"
                     ' file (load() reads it)."""\n')
        # annotations postponed: a derive function copied below may name types the file
        # does not import
        parts = [docstring, "from __future__ import annotations\n",
                 *(["import collections"] if self.named_tuples else []), "import os\n",
                 "import torch", "import torch.nn.functional as F", "from torch import nn"]
        parts += sorted(self.imports | ({QUANT_OPS_IMPORT} if self.helpers else set()))
        if self.named_tuples:  # what the model returns, defined here: the file stands alone
            parts.append("\n")
        parts += [f"{name} = collections.namedtuple({name!r}, {fields!r})"
                  for name, fields in self.named_tuples.items()]
        for kind in sorted(self.helpers):
            parts.append("\n" + QUANT_HELPERS[kind][1].rstrip())
        for fn in self._derive_functions():
            parts.append("\n\n" + fn.rstrip())
        parts.append(f"\n\nclass {self.class_name}(nn.Module):")
        parts.append("    def __init__(self):")
        parts.append("        super().__init__()")
        parts += [wrapped for line in init for wrapped in _wrap(f"        {line}")]
        parts.append("")
        parts += [f"    {line}" if line else "" for line in body]
        parts.append(f'\n\nWEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),'
                     f' "{self.weights_name}")')
        parts.append(f"\n\ndef load(weights: str = WEIGHTS) -> {self.class_name}:")
        parts.append('    """The model with its weights, in eval mode."""')
        parts.append(f"    model = {self.class_name}()")
        parts.append('    model.load_state_dict(torch.load(weights, map_location="cpu"))')
        parts.append("    return model.eval()")
        return "\n".join(parts) + "\n"

    # ------------------------------------------------------------------ forward

    def _forward(self) -> list[str]:
        inputs, lines, scope = [], [], None
        for node in self.module.graph.nodes:
            if node.op == "placeholder":
                inputs.append(self._name(node))
            elif node.op == "get_attr":
                self.names[node] = "self." + self._attribute(node.target)
            elif node.op == "call_module":
                if node.target == "_guards_fn":  # export's check of the input shapes
                    continue
                submodule = self.module.get_submodule(node.target)
                if not _is_observer(submodule):
                    raise self._error(node, f"a call of a {type(submodule).__name__}"
                                            " submodule")
                attribute = _identifier(node.target)
                self.submodules[attribute] = submodule
                args = ", ".join(literal(a, self._expression) for a in node.args)
                lines.append(f"{self._name(node)} = self.{attribute}({args})")
            elif node.op == "call_function":
                here = _module_path(node) or f"({self.class_name})"
                if here != scope:
                    lines.append(f"# {here}")
                scope = here
                try:
                    expression = render_call(node, self._expression, self.helpers)
                except CodegenError as e:
                    raise self._error(node, str(e)) from None
                lines.append(f"{self._name(node)} = {expression}")
            elif node.op == "output":
                lines.append(f"return {self._output(node)}")
        header = ["def forward(self" + "".join(f", {n}" for n in inputs) + "):"]
        return header + [wrapped for line in lines for wrapped in _wrap(f"    {line}")]

    def _output(self, node: torch.fx.Node) -> str:
        leaves = node.args[0]
        flat = list(leaves) if isinstance(leaves, (tuple, list)) else [leaves]
        spec = getattr(self.module, "_out_spec", None)
        values = iter(literal(v, self._expression) for v in flat)
        if spec is None:
            return ", ".join(values) if len(flat) > 1 else next(values)
        return _structure(spec, values, self.named_tuples)

    def _expression(self, node: torch.fx.Node) -> str:
        return self.names[node]

    def _name(self, node: torch.fx.Node) -> str:
        name = _identifier(node.name)
        while name in self.used:
            name += "_"
        self.used.add(name)
        self.names[node] = name
        return name

    def _error(self, node: torch.fx.Node, reason: str) -> CodegenError:
        from ..capture.export import source_location

        return CodegenError(f"trace_to_code cannot express node {node.name}"
                            f" ({node.target}) at {source_location(node)}: {reason}")

    # ------------------------------------------------------------------ state

    def _attribute(self, target: str) -> str:
        attribute = _identifier(target)
        if attribute in self.state:
            return attribute
        value = get_attribute(self.module, target)
        if not isinstance(value, torch.Tensor):
            raise CodegenError(f"attribute {target} is a {type(value).__name__}, not a tensor")
        self.state[attribute] = value.detach().clone()
        shape = literal(tuple(value.shape), str)
        dtype = "" if value.dtype == torch.float32 else f", dtype={value.dtype}"
        empty = f"torch.empty({shape}{dtype})"
        if isinstance(value, torch.nn.Parameter):
            grad = "" if value.requires_grad else ", requires_grad=False"
            self.attributes.append(f"self.{attribute} = nn.Parameter({empty}{grad})")
        else:
            self.attributes.append(f'self.register_buffer("{attribute}", {empty})')
        return attribute

    # ------------------------------------------------------------------ observers

    def _observer_lines(self) -> list[str]:
        """Observer submodules, derived ones (reading others) last; their state too."""
        lines = []
        ordered = sorted(self.submodules.items(),
                         key=lambda item: hasattr(item[1], "obs_or_fqs"))
        for attribute, observer in ordered:
            lines.append(f"self.{attribute} = {self._constructor(observer)}")
            for key, value in observer.state_dict().items():
                self.state[f"{attribute}.{key}"] = value.detach().clone()
        return lines

    def _constructor(self, observer: Any) -> str:
        """The expression constructing ``observer`` again: a torch.ao or torchao observer
        (torchao has no types), whose attributes tell which kind it is."""
        cls = type(observer)
        self.imports.add(f"from {cls.__module__} import {cls.__name__}")
        if hasattr(observer, "obs_or_fqs"):  # derived from other observers' parameters
            sources = []
            for source in observer.obs_or_fqs:
                found = [a for a, m in self.submodules.items() if m is source]
                if not found:
                    raise CodegenError(f"a derived {cls.__name__} reads an observer that is"
                                       " not a submodule of the model")
                sources.append(f"self.{found[0]}")
            kwargs = _constructor_arguments(observer, skip=("obs_or_fqs", "derive_qparams_fn"))
            kwargs["obs_or_fqs"] = f"[{', '.join(sources)}]"
            kwargs["derive_qparams_fn"] = observer.derive_qparams_fn.__name__
        elif hasattr(observer, "activation_post_process"):  # a fake quantize around one
            inner = observer.activation_post_process
            inner_cls = type(inner)
            self.imports.add(f"from {inner_cls.__module__} import {inner_cls.__name__}")
            kwargs = _constructor_arguments(inner, skip=())
            kwargs.update(_constructor_arguments(observer, skip=("observer",)))
            kwargs["observer"] = inner_cls.__name__
        else:
            kwargs = _constructor_arguments(observer, skip=())
        arguments = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        return f"{cls.__name__}({arguments})"

    def _derive_functions(self) -> list[str]:
        sources = []
        for observer in self.submodules.values():
            fn = getattr(observer, "derive_qparams_fn", None)
            if fn is None:
                continue
            try:
                text = textwrap.dedent(inspect.getsource(fn))
            except (OSError, TypeError):
                raise CodegenError(f"the function {fn!r} deriving a quantization from others"
                                   " has no source to copy") from None
            if not text.startswith("def ") or text in sources:
                continue
            sources.append(text)
        return sources


def _wrap(line: str, width: int = 100) -> list[str]:
    """A long call broken after commas between its arguments, aligned under the first."""
    if len(line) <= width or "(" not in line:
        return [line]
    opening = line.index("(") + 1
    pieces, depth, start, quote = [], 0, 0, ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 1 and i > opening:
            pieces.append(line[start:i + 1])
            start = i + 2
    pieces.append(line[start:])
    lines, current = [], pieces[0]
    for piece in pieces[1:]:
        if len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = " " * opening + piece
        else:
            current += " " + piece
    return lines + [current]


def _constructor_arguments(module: torch.nn.Module, skip: tuple[str, ...]) -> dict[str, str]:
    """Keyword arguments rebuilding ``module``: its constructor's parameters that it keeps
    as attributes of the same name (tensors of one element as numbers)."""
    result = {}
    for name, parameter in inspect.signature(type(module).__init__).parameters.items():
        if name in ("self", "factory_kwargs") or name in skip or parameter.kind in (
                parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL) or not hasattr(module, name):
            continue
        value = getattr(module, name)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        try:
            result[name] = literal(value, str)
        except CodegenError:
            if parameter.default is parameter.empty:
                raise CodegenError(f"{type(module).__name__}: its argument {name} cannot be"
                                   " written") from None
    return result


def _is_observer(module: torch.nn.Module) -> bool:
    return any(base.__name__ in ("ObserverBase", "FakeQuantizeBase")
               for base in type(module).__mro__)


def _structure(spec: TreeSpec, leaves: Iterator[str],
               named_tuples: dict[str, tuple[str, ...]]) -> str:
    """The return expression of a pytree of values; the named tuples it builds are recorded
    in ``named_tuples``."""
    if spec.is_leaf():
        return next(leaves)
    items = [_structure(child, leaves, named_tuples) for child in spec.children()]
    # a named tuple's node: its class is the context (the type is pytree's marker)
    cls = spec.context if isinstance(spec.context, type) else spec.type
    if _is_named_tuple_type(cls):
        named_tuples[cls.__name__] = tuple(cls._fields)
        return f"{cls.__name__}({', '.join(items)})"
    if spec.type is list:
        return f"[{', '.join(items)}]"
    if spec.type is dict:
        keys = spec.context
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, items, strict=False)) + "}"
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _check_structure(path: str, actual: object, expected: object) -> None:
    """The generated module returns what the model does: the same dicts, named tuples and
    nesting (a structure of tensors; other returns are compared value by value)."""
    try:
        want, got = structure_of(expected), structure_of(actual)
    except CaptureError:  # not a structure of tensors: its values are compared
        return
    if not got.same_as(want):
        raise CodegenError(f"the generated {path} returns {got.describe()}, the model"
                           f" {want.describe()}")


def _is_named_tuple_type(cls: object) -> TypeGuard[type[NamedTuple]]:
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def _module_path(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = list(stack.values())[-1]
    name = cls if isinstance(cls, str) else getattr(cls, "__name__", str(cls))
    return f"{path}: {name.rsplit('.', 1)[-1]}" if path else ""


def _identifier(text: str) -> str:
    name = re.sub(r"\W", "_", text)
    if not name or name[0].isdigit() or keyword.iskeyword(name):
        name = "v_" + name
    return name


# ------------------------------------------------------------------------------ checking


def _verify(model: torch.nn.Module | torch.export.ExportedProgram,
            examples: tuple[torch.Tensor, ...], path: str, weights_path: str) -> float:
    """The largest absolute difference between the generated model and the original."""
    spec = importlib.util.spec_from_file_location(
        f"torch_nnapi_generated_{abs(hash(os.path.abspath(path)))}", path)
    if spec is None or spec.loader is None:
        raise CodegenError(f"the generated {path} cannot be imported")
    generated_module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(generated_module)
        generated = generated_module.load(weights_path)
    except Exception as e:  # a file that does not load is an error to report
        raise CodegenError(f"the generated {path} does not load: {type(e).__name__}: {e}")\
            from e
    original = model.module() if isinstance(model, torch.export.ExportedProgram) else model
    # A copy of the state dict keeps its _metadata: modules check their saved versions when it
    # is loaded back (torchvision's MNASNet refuses a state without one).
    state = copy.copy(original.state_dict())
    for key, value in state.items():
        state[key] = value.clone()
    try:
        with torch.no_grad():
            expected_out = original(*[x.clone() for x in examples])
            actual_out = generated(*[x.clone() for x in examples])
    finally:
        original.load_state_dict(state)  # observers record what they see: not these examples
    _check_structure(path, actual_out, expected_out)
    expected = torch.utils._pytree.tree_leaves(expected_out)
    actual = torch.utils._pytree.tree_leaves(actual_out)
    if len(expected) != len(actual):
        raise CodegenError(f"the generated {path} returns {counted(len(actual), 'value')},"
                           f" the model {len(expected)}")
    error = 0.0
    for want, got in zip(expected, actual, strict=True):
        if isinstance(want, torch.Tensor):
            if want.shape != got.shape:
                raise CodegenError(f"the generated {path} returns shape {list(got.shape)},"
                                   f" the model {list(want.shape)}")
            if want.numel():
                error = max(error, float((got.double() - want.double()).abs().max()))
        elif want != got:
            raise CodegenError(f"the generated {path} returns {got!r}, the model {want!r}")
    return error
