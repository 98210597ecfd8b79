"""Capture through ``torch.export``: the exported ATen graph as the converter's :class:`Graph`.

The second producer of the graph the lowerings walk (``script.py`` is the TorchScript one).
An ``nn.Module`` is exported here (``torch.export.export``, non-strict); an
``ExportedProgram``, or the ``GraphModule`` that ``ExportedProgram.module()`` and PT2E
quantization return, is taken as is. Each ``call_function`` node becomes a :class:`Node` of
the op's schema name (``aten.conv2d.default`` -> ``"aten::conv2d"``) with its arguments in the
schema's positional order and defaults filled in, as TorchScript nodes have them, so one
lowering serves both front-ends. Parameters, buffers and lifted constants become constants;
``operator.getitem`` picks an output of a multi-output node; SymInt arithmetic on sizes
(``operator.mul`` ...) becomes the number ops the scalar lowerings fold. Symbolic input
dimensions (``torch.export.Dim``) are the converter's flexible dimensions.

Batch norms that follow a convolution are folded into it, as freezing does on the TorchScript
path. The graph is probed like the traced one: run once on the example inputs (an
``torch.fx.Interpreter``) so every value carries its example shape, dtype and quantization.
"""

from __future__ import annotations

import inspect
import operator
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeGuard

import torch
from torch.fx.node import Argument
from torch.utils._pytree import TreeSpec, tree_unflatten

from ...nnapi.errors import counted
from ..errors import CaptureError, ConverterBug, first_line
from ..outputs import TENSOR, OutputStructure, structure_of
from .flat_outputs import checked
from .graph import NO_CONSTANT, SCALAR_TYPES, ExampleTensor, Graph, Node, Value
from .script import example_of

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

# Python callables export records for SymInt arithmetic -> the TorchScript kind lowering it.
_PYTHON_OPS = {
    operator.add: "aten::add", operator.sub: "aten::sub", operator.mul: "aten::mul",
    operator.floordiv: "aten::floordiv", operator.truediv: "aten::div",
    operator.mod: "aten::remainder", operator.neg: "aten::neg",
    operator.eq: "aten::eq", operator.ne: "aten::ne", operator.lt: "aten::lt",
    operator.le: "aten::le", operator.gt: "aten::gt", operator.ge: "aten::ge",
    torch.sym_max: "prim::max", torch.sym_min: "prim::min", torch.sym_int: "aten::Int",
    torch.sym_float: "aten::Float", torch.sym_not: "aten::__not__",
}
# ATen overloads that export names differently from TorchScript.
_RENAMED = {"aten::sym_size": "aten::size", "aten::sym_numel": "aten::numel"}
# Runtime assertions on sizes and metadata: no value, nothing to lower.
_DROPPED = {"aten::_assert_scalar", "aten::sym_constrain_range",
            "aten::sym_constrain_range_for_size", "aten::_assert_tensor_metadata",
            "aten::_assert_async"}
# Core ATen ops whose extra outputs (pooling indices, batch statistics) are rarely read: with
# those unread they are the TorchScript op named here, with a single output.
_SINGLE_OUTPUT = {"aten::max_pool2d_with_indices": "aten::max_pool2d",
                  "aten::_native_batch_norm_legit_no_training":
                      "aten::_native_batch_norm_legit_no_training"}
# ExecuTorch's edge dialect replaces view ops by functional copies with the same schema
# (``aten.view_copy``); values are the same, so they lower as the view ops do.
_VIEW_COPIES = {f"aten::{name}_copy": f"aten::{name}" for name in (
    "view", "permute", "expand", "slice", "select", "unsqueeze", "squeeze", "transpose", "t",
    "alias", "detach", "split", "split_with_sizes", "unbind", "narrow", "diagonal", "unfold")}
_CONVOLUTIONS = ("aten::conv1d", "aten::conv2d", "aten::convolution", "aten::_convolution")
_BATCH_NORMS = ("aten::batch_norm", "aten::_native_batch_norm_legit_no_training")

# What the export front-end captures from: an ExportedProgram, or the GraphModule of one.
Exported: TypeAlias = torch.export.ExportedProgram | torch.fx.GraphModule
# What a value is on some inputs (``example_of``): a tensor's properties, a number, None.
Example: TypeAlias = ExampleTensor | bool | int | float | None


# ------------------------------------------------------------------------------ entry points


def is_exported(model: object) -> TypeGuard[Exported]:
    """An ExportedProgram, or a GraphModule that torch.export (or PT2E) produced."""
    if isinstance(model, torch.export.ExportedProgram):
        return True
    return isinstance(model, torch.fx.GraphModule) and any(
        "val" in n.meta for n in model.graph.nodes if n.op == "placeholder")


def export_module(model: object, examples: tuple[torch.Tensor, ...],
                  flexible: Sequence[Sequence[int]] = (), train: bool = False
                  ) -> torch.export.ExportedProgram:
    """``torch.export.export`` of ``model`` in eval mode (training mode for QAT), with each
    flexible dimension a ``Dim``; raises ValueError naming a flexible dimension the model
    specializes."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected an nn.Module, an ExportedProgram or the GraphModule of one,"
                        f" got {type(model).__name__}")
    model = model.train(train)
    examples = unaliased(examples)
    dynamic = None
    if any(flexible):
        dynamic = tuple({d % x.dim(): torch.export.Dim.DYNAMIC for d in dims} or None
                        for x, dims in zip(examples, flexible, strict=False))
        # export fixes dimensions of size 0 and 1 whatever it is told: trace with 2 there;
        # copies, as export marks the tensors it is given as dynamic
        examples = tuple(_widened(x, dims).clone()
                         for x, dims in zip(examples, flexible, strict=False))
    try:
        program = torch.export.export(model, examples, dynamic_shapes=dynamic, strict=False)
    except Exception as e:  # torch.export's own errors are long and varied: one line
        fixed = _fixed_dimension(e, model)
        if fixed is not None:
            raise CaptureError(f"input {fixed[0]} dimension {fixed[1]} cannot be flexible: the"
                               " model fixes it") from e
        raise CaptureError(f"torch.export could not capture the model: {first_line(e)}")\
            from e
    found = flexible_dims(program)
    for i, (x, dims) in enumerate(zip(examples, flexible, strict=False)):
        for d in dims:
            if d % x.dim() not in found[i]:
                raise CaptureError(f"input {i} dimension {d % x.dim()} cannot be flexible:"
                                   " the exported model specializes it")
    return program


def unaliased(examples: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """``examples`` with every tensor that shares memory with an earlier one copied.
    torch.export takes two inputs given the same tensor for one: the program then reads the
    first for both, whatever it is given later (a decoder's two empty caches, passed as one
    zero tensor, become one). Examples stand for data, never for aliasing."""
    seen: set[int] = set()
    result = []
    for x in examples:
        if x.numel() > 0:
            storage = x.untyped_storage().data_ptr()
            if storage in seen:
                x = x.clone()
            else:
                seen.add(storage)
        result.append(x)
    return tuple(result)


def _widened(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """``x`` repeated to size 2 along the flexible dimensions where it has size 1."""
    for d in dims:
        if x.shape[d] == 1:
            x = torch.cat([x, x], d)
    return x


def flexible_dims(program: Exported) -> list[tuple[int, ...]]:
    """Per user input, the dimensions the exported program keeps symbolic."""
    result = []
    for node in _user_placeholders(program):
        val = node.meta.get("val")
        shape = getattr(val, "shape", ())
        result.append(tuple(d for d, n in enumerate(shape) if _is_symbolic(n)))
    return result


def capture_exported(program: Exported, example_inputs: tuple[torch.Tensor, ...],
                     keep_values: bool = False) -> Graph:
    """The graph of an exported program (or of its ``.module()``), probed on the examples;
    with ``keep_values`` each value keeps its example tensor, for layer-wise checks."""
    return exported_capture(program, example_inputs, keep_values).graph


def exported_capture(program: Exported, example_inputs: tuple[torch.Tensor, ...],
                     keep_values: bool = False, state: dict[str, object] | None = None
                     ) -> ExportedCapture:
    """:func:`capture_exported`, keeping what probes the graph again and the fx nodes behind
    each value (what the regions and the ExecuTorch partitioner need). ``state`` replaces
    the program's parameters, buffers and constants by name (ExecuTorch partitions a copy
    whose parameters are fake tensors)."""
    copier = _Copier(program)
    if state is not None:
        copier.state = state
    graph = copier.copy()
    if len(example_inputs) != len(graph.inputs):
        raise TypeError(f"the exported model takes {counted(len(graph.inputs), 'input')}, but"
                        f" {counted(len(example_inputs), 'example input')} given")
    copier.probe(example_inputs, keep_values)
    fold_batch_norms(graph)
    fx_nodes: dict[Value, list[torch.fx.Node]] = {}
    for n, produced in copier.values.items():
        for v in produced if isinstance(produced, list) else [produced]:
            fx_nodes.setdefault(v, []).append(n)
    return ExportedCapture(graph, fx_nodes, copier)


# ------------------------------------------------------------------------------ copying


class _Copier:
    """Copies an exported fx graph into plain :class:`Graph` objects."""

    def __init__(self, program: Exported) -> None:
        self.module: torch.fx.GraphModule
        self.signature: torch.export.ExportGraphSignature | None
        self.state: dict[str, object]  # the program's parameters, buffers and constants
        self.out_spec: TreeSpec | None  # how the outputs nest (None: a flat tuple)
        self.input_kinds: dict[str, tuple[str, str | None]]  # placeholder -> (kind, target)
        if isinstance(program, torch.export.ExportedProgram):
            self.module = program.graph_module
            self.signature = program.graph_signature
            self.state = {**program.state_dict, **program.constants}
            self.out_spec = program.call_spec.out_spec
            self.input_kinds = {spec.arg.name: (spec.kind.name, spec.target)
                                for spec in program.graph_signature.input_specs}
        else:
            self.module = program
            self.signature = None
            self.state = {}
            self.out_spec = getattr(program, "_out_spec", None)
            self.input_kinds = {}
        self.values: dict[torch.fx.Node, Value | list[Value]] = {}
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.placeholders: list[Value] = []  # every placeholder's value, in the graph's order

    def copy(self) -> Graph:
        for n in self.module.graph.nodes:
            if n.op == "placeholder":
                self._placeholder(n)
            elif n.op == "get_attr":
                self.values[n] = _constant(n.name, get_attribute(self.module, n.target))
            elif n.op == "call_function":
                self._call(n)
            elif n.op == "call_module":
                if n.target != "_guards_fn":  # export's check of the input shapes
                    submodule = type(self.module.get_submodule(n.target)).__name__
                    self._node(n, f"call_module::{submodule}", [self.value(a, n) for a in n.args])
            elif n.op == "output":
                output, structure = self._output(n)
                return Graph(self.inputs, self.nodes, output, structure)
        raise CaptureError("the exported graph has no output")

    def _placeholder(self, n: torch.fx.Node) -> None:
        kind, target = self.input_kinds.get(n.name, ("USER_INPUT", None))
        if kind == "USER_INPUT":
            v = Value(n.name, "Tensor", "TensorType")
            self.inputs.append(v)
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR", "CUSTOM_OBJ"):
            assert target is not None, "a lifted input names what it lifts"
            v = _constant(n.name, self.state[target])
        else:
            raise CaptureError(f"the exported program has an input of kind {kind} ({n.name}),"
                               " which a converted model cannot take")
        self.values[n] = v
        self.placeholders.append(v)

    def _call(self, n: torch.fx.Node) -> None:
        target = aten_overload(n.target)
        if target is operator.getitem:
            source, index = list(n.args)  # fx types both as any argument: (node, int)
            produced = self.values[source]  # type: ignore[index]  # a node
            if isinstance(produced, list):
                produced = produced[int(index)]  # type: ignore[arg-type]  # an int
            self.values[n] = produced
            return
        if isinstance(target, torch._ops.OpOverload):
            kind = _RENAMED.get(target._schema.name, target._schema.name)
            kind = _VIEW_COPIES.get(kind, kind)
            if kind in _DROPPED:
                return
            args = _schema_arguments(target, n)
            single = _SINGLE_OUTPUT.get(kind)
            if single is not None and all(u.target is operator.getitem and u.args[1] == 0
                                          for u in n.users):
                self._node(n, single, [self.value(a, n) for a in args], "", keep=1)
                return
            self._node(n, kind, [self.value(a, n) for a in args], str(target._schema))
            return
        # any fx target is looked up (a name, or a callable not in the table, gives None)
        python_kind: str | None = _PYTHON_OPS.get(target)
        if python_kind is None:
            name = getattr(target, "__name__", type(target).__name__)
            prefix = "higher_order" if isinstance(target, torch._ops.HigherOrderOperator) \
                else "python"
            python_kind = f"{prefix}::{name}"
        self._node(n, python_kind, [self.value(a, n) for a in n.args])

    def _node(self, n: torch.fx.Node, kind: str, inputs: list[Value], schema: str = "",
              keep: int | None = None) -> None:
        """A node for ``n`` (its first ``keep`` outputs when given)."""
        val = n.meta.get("val")
        if keep is not None and isinstance(val, (tuple, list)):
            val = list(val[:keep]) if keep > 1 else val[0]
        location = source_location(n)
        if isinstance(val, (tuple, list)) and not _returns_list(n):
            outputs = [Value(f"{n.name}.{i}", _type_of(v), "") for i, v in enumerate(val)]
            self.nodes.append(Node(kind, inputs, outputs, location, schema))
            self.values[n] = outputs
            return
        out = Value(n.name, _type_of(val), "")
        self.nodes.append(Node(kind, inputs, [out], location, schema))
        if isinstance(val, (tuple, list)):  # a Tensor[] result: unpacked for getitem
            items = [Value(f"{n.name}.{i}", "Tensor", "TensorType") for i in range(len(val))]
            self.nodes.append(Node("prim::ListUnpack", [out], items, location))
            self.values[n] = items
        else:
            self.values[n] = out

    def value(self, a: Argument, user: torch.fx.Node) -> Value:
        """The Value of an argument: a node's value, a list built by prim::ListConstruct
        when it holds values, or a constant."""
        if isinstance(a, torch.fx.Node):
            found = self.values.get(a)
            if found is None:
                raise ConverterBug(f"{user.name} reads {a.name}, which the converter dropped")
            if isinstance(found, list):
                return self._list(found, user)
            return found
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in a):
            return self._list([self.value(x, user) for x in a], user)
        return _constant(f"c{len(self.values)}", _torchscript_constant(a))

    def _list(self, items: list[Value], user: torch.fx.Node) -> Value:
        out = Value(f"{user.name}.list{len(self.nodes)}", "list", "ListType")
        self.nodes.append(Node("prim::ListConstruct", items, [out], source_location(user)))
        return out

    def _output(self, n: torch.fx.Node) -> tuple[Value, OutputStructure]:
        """The graph's return, flat (one tensor, or a tuple of them), and how the model
        nests those tensors."""
        leaves = list(n.args[0]) if isinstance(n.args[0], (tuple, list)) else [n.args[0]]
        if self.signature is not None:
            kinds = [spec.kind.name for spec in self.signature.output_specs]
            leaves = [v for v, k in zip(leaves, kinds, strict=False) if k == "USER_OUTPUT"]
        stand_ins = [_stand_in(a) for a in leaves]
        if self.out_spec is None:
            returned = stand_ins[0] if len(stand_ins) == 1 else tuple(stand_ins)
        else:
            try:
                returned = tree_unflatten(stand_ins, self.out_spec)
            except Exception as e:  # noqa: BLE001 - a class's own unflattening
                raise CaptureError(f"the model's output cannot be rebuilt from the exported"
                                   f" graph's: {first_line(e)}") from None
        structure = checked(structure_of(returned))
        values = [self.value(v, n) for v in leaves if v is not None]
        if structure.kind == TENSOR:
            return values[0], structure
        out = Value(f"output{len(self.nodes)}", "tuple", "")
        self.nodes.append(Node("prim::TupleConstruct", values, [out],
                               "the model's return statement"))
        return out, structure

    # -------------------------------------------------------------------------- probing

    def run(self, examples: tuple[torch.Tensor, ...], keep_values: bool
            ) -> dict[Value, tuple[Example, torch.Tensor | None]] | None:
        """Runs the graph on the examples: every top-level value's example (and, with
        ``keep_values``, its tensor); None when the graph fails on them."""
        results: dict[torch.fx.Node, list[tuple[Example, torch.Tensor | None]]] = {}

        class Recorder(torch.fx.Interpreter):
            def run_node(self, n: torch.fx.Node) -> Any:  # whatever the node computes
                result = super().run_node(n)
                items = list(result) if isinstance(result, (tuple, list)) else [result]
                results[n] = [(example_of(x), x.detach().clone() if keep_values and
                               isinstance(x, torch.Tensor) else None) for x in items]
                return result

        user = iter(examples)
        flat = [v.constant if v.is_constant else next(user).clone() for v in self.placeholders]
        try:
            with torch.no_grad():
                Recorder(self.module).run(*flat, enable_io_processing=False)
        except Exception:  # noqa: BLE001 - probing is a check; conversion works without it
            return None
        found: dict[Value, tuple[Example, torch.Tensor | None]] = {}
        for n, items in results.items():
            produced = self.values.get(n)
            if produced is None or n.target is operator.getitem:
                continue
            for value, item in zip(produced if isinstance(produced, list) else [produced],
                                   items, strict=False):
                if not value.is_constant:
                    found[value] = item
        return found

    def probe(self, examples: tuple[torch.Tensor, ...], keep_values: bool) -> None:
        """Runs the graph on the examples and records every value's example (and tensor)."""
        for value, (example, tensor) in (self.run(examples, keep_values) or {}).items():
            value.example, value.tensor = example, tensor


@dataclass(eq=False)
class ExportedCapture:
    """An exported program's graph that runs again on other inputs (the regions' trial
    probes it, as it probes a TorchScript capture) and names the fx nodes behind each value
    (the ExecuTorch partitioner tags those)."""

    graph: Graph
    fx_nodes: dict[Value, list[torch.fx.Node]]  # the node computing it, then its getitems
    copier: _Copier
    # no TorchScript values: nothing the regions compute stands for a TorchScript constant
    values: dict[Value, torch._C.Value] = field(default_factory=dict)

    def probe(self, inputs: tuple[torch.Tensor, ...]
              ) -> dict[Value, Example] | None:
        """What every top-level value is on ``inputs``, or None if the graph fails."""
        found = self.copier.run(inputs, keep_values=False)
        if found is None:
            return None
        return {v: example for v, (example, _) in found.items()}


def _stand_in(a: Argument) -> object:
    """What an output of the graph stands for in the model's own containers: a tensor for
    a node computing one (or not saying what it computes), else what it is."""
    if isinstance(a, torch.fx.Node):
        val = a.meta.get("val")
        return val if val is not None and not isinstance(val, torch.Tensor) else \
            torch.empty(0)
    return a


def aten_overload(target: Any) -> Any:
    """The ATen overload an ExecuTorch edge-dialect op (``EdgeOpOverload``) stands for, found
    by its ``_op`` attribute (capture never imports ExecuTorch); any other target as is."""
    inner = getattr(target, "_op", None)
    if type(target).__name__ == "EdgeOpOverload" and isinstance(inner, torch._ops.OpOverload):
        return inner
    return target


def _schema_arguments(op: torch._ops.OpOverload, n: torch.fx.Node) -> list[Argument]:
    """The node's arguments in schema order, defaults filled in (TorchScript's convention)."""
    args, kwargs = list(n.args), dict(n.kwargs)
    result: list[Argument] = []
    for i, arg in enumerate(op._schema.arguments):
        if not arg.kwarg_only and i < len(args):
            result.append(args[i])
        elif arg.name in kwargs:
            result.append(kwargs.pop(arg.name))
        elif arg.has_default_value():
            result.append(arg.default_value)
        else:
            raise CaptureError(f"{n.name} ({op}) lacks its argument {arg.name!r}")
    return result


def _torchscript_constant(a: object) -> object:
    """A constant as TorchScript holds it: dtypes as ScalarType codes, devices as strings."""
    if isinstance(a, torch.dtype):
        return SCALAR_TYPES.get(str(a).replace("torch.", ""), str(a))
    if isinstance(a, (torch.device, torch.layout, torch.memory_format)):
        return str(a).replace("torch.", "")
    if isinstance(a, (list, tuple)):
        return [_torchscript_constant(x) for x in a]
    return a


def _constant(name: str, value: object) -> Value:
    return Value(name, type(value).__name__, "", constant=value)


def get_attribute(module: torch.nn.Module, target: str) -> object:
    """The attribute a ``get_attr`` node reads (a dotted path)."""
    obj: object = module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _user_placeholders(program: Exported) -> list[torch.fx.Node]:
    if isinstance(program, torch.export.ExportedProgram):
        names = set(program.graph_signature.user_inputs)
        return [n for n in program.graph.nodes if n.op == "placeholder" and n.name in names]
    return [n for n in program.graph.nodes if n.op == "placeholder"]


def _is_symbolic(n: object) -> bool:
    return isinstance(n, torch.SymInt) and not n.node.is_constant() \
        and bool(n.node.expr.free_symbols)


def _returns_list(n: torch.fx.Node) -> bool:
    """True when the op returns one Tensor[] (split, unbind...), not several values."""
    target = aten_overload(n.target)
    if not isinstance(target, torch._ops.OpOverload):
        return False
    returns = target._schema.returns
    return len(returns) == 1 and returns[0].type.kind() == "ListType"


def _type_of(val: object) -> str:
    if isinstance(val, torch.Tensor):
        return "Tensor"
    if isinstance(val, (tuple, list)):
        return "Tensor[]"
    return type(val).__name__ if val is not None else "None"


# ------------------------------------------------------------------------------ locations

_FRAME = re.compile(r'File "(.+?)", line (\d+), in (\S+)')


def source_location(n: torch.fx.Node, depth: int = 3) -> str:
    """``file:line (function), module path``: the innermost frame of the user's code. A node
    quantization inserted (no stack of its own) is placed at the op whose tensor it reads."""
    frames = _FRAME.findall(n.meta.get("stack_trace") or "")
    stack = n.meta.get("nn_module_stack") or {}
    scope = ""
    if stack:
        path = list(stack.values())[-1][0]
        scope = f", module {path}" if path else ""
    if frames:
        user = [f for f in frames if not f[0].startswith((_TORCH_DIR, _OWN_DIR))]
        file, line, function = (user or frames)[-1]
        return f"{file}:{line} ({function}){scope}"
    if depth and n.all_input_nodes:
        found = source_location(n.all_input_nodes[0], depth - 1)
        if not found.startswith("<"):
            target = aten_overload(n.target)
            inserted = isinstance(target, torch._ops.OpOverload) \
                and target._schema.name.startswith("quantized_decomposed::")
            return found + _INSERTED if inserted and not found.endswith(_INSERTED) else found
    return f"<node {n.name}>{scope}"


_INSERTED = " (inserted by quantization)"


# ------------------------------------------------------------------------------ batch norms


def fold_batch_norms(graph: Graph) -> None:
    """Folds each inference batch norm into the convolution before it (the convolution's
    output read by nothing else, every parameter a constant), as TorchScript's freezing
    does: the weights are scaled per output channel and the bias shifted."""
    readers: dict[Value, int] = {}
    producers: dict[Value, Node] = {}
    for node in graph.walk():
        for v in node.inputs:
            readers[v] = readers.get(v, 0) + 1
        for v in node.outputs:
            producers[v] = node
    readers[graph.output] = readers.get(graph.output, 0) + 1
    removed: set[int] = set()
    for bn in graph.nodes:
        if bn.kind not in _BATCH_NORMS:
            continue
        conv = producers.get(bn.inputs[0])
        if conv is None or conv.kind not in _CONVOLUTIONS or readers.get(bn.inputs[0]) != 1:
            continue
        folded = _folded_parameters(conv, bn)
        if folded is None or any(readers.get(v, 0) for v in bn.outputs[1:]):
            continue
        weight, bias = folded
        conv.inputs[1] = _constant(conv.inputs[1].name + ".bn", weight)
        conv.inputs[2] = _constant(conv.inputs[2].name + ".bn", bias)
        conv.outputs = [bn.outputs[0]]
        removed.add(id(bn))
    graph.nodes[:] = [n for n in graph.nodes if id(n) not in removed]


def _folded_parameters(conv: Node, bn: Node) -> tuple[torch.Tensor, torch.Tensor] | None:
    values: list[Any] = [v.constant if v.is_constant else NO_CONSTANT for v in bn.inputs]
    if bn.kind == "aten::batch_norm":
        _, gamma, beta, mean, var, training, _, eps, _ = values
        if training is not False:
            return None
    else:
        _, gamma, beta, mean, var, _, eps = values
    w = conv.inputs[1].constant if conv.inputs[1].is_constant else None
    b: Any = conv.inputs[2].constant if conv.inputs[2].is_constant else NO_CONSTANT
    transposed = conv.kind in ("aten::convolution", "aten::_convolution") \
        and conv.inputs[6].constant is not False
    if not isinstance(w, torch.Tensor) or b is NO_CONSTANT or transposed \
            or not all(isinstance(t, torch.Tensor) for t in (mean, var)) \
            or not isinstance(eps, float):
        return None
    with torch.no_grad():
        scale = torch.rsqrt(var.double() + eps)
        if isinstance(gamma, torch.Tensor):
            scale = scale * gamma.double()
        shift = -mean.double() * scale
        if isinstance(beta, torch.Tensor):
            shift = shift + beta.double()
        if isinstance(b, torch.Tensor):
            shift = shift + b.double() * scale
        weight = (w.double() * scale.reshape((-1,) + (1,) * (w.dim() - 1))).to(w.dtype)
    return weight, shift.to(w.dtype)


_VIOLATED = re.compile(r"L\['(\w+)'\]\.size\(\)\[(\d+)\]")


def _fixed_dimension(e: BaseException, model: torch.nn.Module) -> tuple[int, int] | None:
    """(input, dimension) a constraint violation of torch.export names, if it names one."""
    found = _VIOLATED.search(str(e)) if "onstraint" in str(e) else None
    if found is None:
        return None
    try:
        names = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return None
    name, dim = found.group(1), int(found.group(2))
    return (names.index(name), dim) if name in names else None
