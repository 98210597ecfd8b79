"""The lowering driver: walks a captured graph and builds the NNAPI model.

Each node goes to its registered lowering. Nodes whose inputs are all constants are
evaluated with PyTorch instead (constant folding: what is known at conversion time never
reaches the model). Failures do not stop the walk: every op kind without a lowering and
every node a lowering rejects is recorded, the values it would have produced are marked
poisoned (their readers are skipped), and one :class:`ConversionError` lists them all.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ...nnapi.codes import OperationType as Op
from ...nnapi.errors import BadDataError
from ...nnapi.model import Lifetime
from ..builder import layout as lay
from ..builder.context import Converter
from ..builder.merged import ungroup
from ..builder.symbolic import Sym, SymInt, hint, input_dim
from ..builder.values import RUNTIME_DTYPES, TensorValue, dtype_name
from ..capture.graph import FUSED_KIND, ExampleTensor, Graph, Node, Value
from ..errors import ConversionError, ConverterBug, Unsupported, UnsupportedUse
from ..lowerings import lowering_for
from ..outputs import LIST, TENSOR, TUPLE, OutputStructure
from . import baked, patterns


class _Poison:
    """The value of anything computed from an unsupported node."""

    def __repr__(self) -> str:
        return "<poisoned>"


POISON = _Poison()
_NOT_FOLDED = object()

# Never evaluated at conversion time even with constant inputs (results would be stale).
_NO_FOLD_PREFIXES = ("aten::rand", "aten::normal", "aten::bernoulli", "aten::empty",
                     "aten::uniform", "aten::multinomial", "aten::dropout",
                     "aten::feature_dropout")


@dataclass(frozen=True)
class InputSpec:
    """How one model input is presented to NNAPI."""

    example: ExampleTensor
    nhwc: bool = False
    flexible: tuple[int, ...] = ()  # PyTorch dimensions resolved at load time


@dataclass
class Lowered:
    cx: Converter
    inputs: list[TensorValue]
    outputs: list[TensorValue]  # distinct NNAPI model outputs
    output_map: list[int]  # returned tensor i is NNAPI output output_map[i]
    structure: OutputStructure  # how the returned tensors nest
    output_ranks: list[int] = field(default_factory=list)  # PyTorch ranks of ``outputs``
    values: dict[Value, Any] = field(default_factory=dict)  # graph Value -> what it was
    # lowered to (a TensorValue, a constant tensor, a number or Sym, a list of those...)
    specs: list[InputSpec] = field(default_factory=list)  # the InputSpec of each input


def dequantized_scale(lowered: Lowered, output: int) -> float:
    """The scale of the quantized tensor the model's returned tensor ``output`` is
    dequantized from (0.0 when it is not the result of a DEQUANTIZE): its quantum."""
    model = lowered.cx.model
    operand = lowered.outputs[lowered.output_map[output]].operand
    for operation in model.operations:
        if operand in operation.outputs:
            if operation.type.name == "DEQUANTIZE":
                return float(model.operands[operation.inputs[0]].scale)
            break
    return 0.0


class Lowerer:
    # The dtypes the back-end's runtime passes in and out of the model (PyTorch Mobile's by
    # default; a back-end with a wider runtime, such as ExecuTorch's, widens it).
    runtime_dtypes: tuple[str, ...] = RUNTIME_DTYPES
    # Whether the back-end's format carries per-channel quantized weights
    # (TENSOR_QUANT8_SYMM_PER_CHANNEL, feature level 3). PyTorch Mobile's serialized NNAPI
    # model cannot, so by default a quantized layer with per-channel weights runs in float on
    # its dequantized weights; ExecuTorch's blob can, and its lowerer says so.
    per_channel_weights: bool = False

    def __init__(self, graph: Graph, specs: Sequence[InputSpec],
                 known: Mapping[Value, Any] | None = None, *,
                 target_level: int | None = None):
        """``known``: values already computed at conversion time (by the caller), such as
        sizes a partitioned graph folded outside the part lowered here; ``target_level`` lets
        lowerings use operations up to that feature level (see Converter.allows)."""
        self.graph = graph
        self.specs = list(specs)
        self.cx = Converter(target_level, per_channel_weights=self.per_channel_weights)
        self.env: dict[Value, Any] = dict(known or {})
        self.produced: dict[Value, Any] = {}  # what each node produced (no in-place rebinding)
        self.unsupported: list[UnsupportedUse] = []

    # ------------------------------------------------------------------ driver

    def run(self, relax_float32_to_float16: bool = False) -> Lowered:
        patterns.fuse(self.graph)
        self.cx.users = value_readers(self.graph)
        walked = list(self.graph.walk())
        self._order = {id(n): i for i, n in enumerate(walked)}
        self._producers = {v: n for n in walked for v in n.outputs}
        inputs = []
        for i, (v, s) in enumerate(zip(self.graph.inputs, self.specs, strict=False)):
            try:
                inputs.append(self._add_input(i, v, s))
            except Unsupported as e:
                raise ConversionError([UnsupportedUse("input", f"input {i}: {e}",
                                                      "the model's inputs")]) from None
        self._find_missing_lowerings()
        self._lower_nodes(self.graph.nodes)
        self.unsupported.extend(self._missing.values())
        returned = self.resolve(self.graph.output)
        outputs, output_map, structure = self._outputs(returned)
        # PyTorch's NNAPI runtime cannot read back the dimensions of a 0-D output (it passes
        # no array): 0-D results leave NNAPI as [1] and the wrapper makes them 0-D again.
        ranks = [t.rank for t in outputs]
        outputs = [self._leaving(i, t) for i, t in enumerate(outputs)]
        if self.unsupported:
            raise ConversionError(self.unsupported)
        model = self.cx.model
        model.identify_inputs_and_outputs([t.operand for t in inputs],
                                          [t.operand for t in outputs])
        model.relax_computation_float32_to_float16(relax_float32_to_float16)
        try:
            model.finish()
        except BadDataError as e:
            raise ConverterBug(f"the converted NNAPI model is invalid: {e}") from e
        return Lowered(self.cx, inputs, outputs, output_map, structure, ranks, self.produced,
                       self.specs)

    def _leaving(self, index: int, t: TensorValue) -> TensorValue:
        """Output ``index`` as it leaves NNAPI: 0-D as [1], grouped layouts undone."""
        try:
            return (self.cx.reshape(t, (1,)) if t.rank == 0 else
                    ungroup(self.cx, t) if t.rank <= 4 else t)
        except Unsupported as e:
            raise ConversionError([UnsupportedUse("output", f"output {index}: {e}",
                                                  "the model's outputs")]) from None

    def _add_input(self, index: int, value: Value, spec: InputSpec) -> TensorValue:
        ex = spec.example
        shape = tuple(input_dim(index, d, n) if d in spec.flexible else n
                      for d, n in enumerate(ex.shape))
        layout = None
        if spec.nhwc:
            if len(shape) != 4:
                raise ValueError(f"input {index}: NHWC needs a 4-D input, got shape"
                                 f" {list(ex.shape)}")
            layout = lay.NHWC
        if ex.dtype not in self.runtime_dtypes:
            raise _input_unsupported(index, f"dtype {ex.dtype} cannot be an input of the"
                                     f" NNAPI runtime ({', '.join(self.runtime_dtypes)} can)")
        if ex.dtype == "bool":
            return self._add_bool_input(index, value, shape, layout)
        dtype, scale, zero_point = ex.dtype, ex.scale, ex.zero_point
        quantized = _quantized_on_host(value, self.cx.users) if dtype == "float32" else None
        if quantized is not None:
            dtype, (scale, zero_point) = "quint8", quantized
        try:
            t = self.cx.new_tensor(shape, dtype, layout, scale, zero_point)
        except Unsupported as e:
            raise _input_unsupported(index, str(e)) from None
        self.cx.model.operands[t.operand].name = f"input{index}"
        self.env[value] = t
        return t

    def _add_bool_input(self, index: int, value: Value, shape: tuple[SymInt, ...],
                        layout: lay.Layout | None) -> TensorValue:
        """PyTorch's NNAPI runtime passes no bool tensors: the wrapper casts a bool input to
        int32 (CAST_INT32) and the model makes it TENSOR_BOOL8 again with NOT_EQUAL 0."""
        t = self.cx.new_tensor(shape, "int32", layout)
        self.cx.model.operands[t.operand].name = f"input{index}"
        zero = self.cx.constant(np.zeros((1,) * max(len(shape), 1), np.int32), "int32")
        self.env[value] = self.cx.emit(Op.NOT_EQUAL, dict(input0=t, input1=zero), shape, "bool",
                                       layout)
        return t

    def _find_missing_lowerings(self) -> None:
        """Every node of a kind without a lowering, found up front: those the walk never
        reaches (downstream of another failure) are reported too, unless they fold."""
        self._missing: dict[int, UnsupportedUse] = {}
        for node in self.graph.walk():
            if node.kind not in _STRUCTURAL and lowering_for(node.kind) is None:
                self._missing[id(node)] = UnsupportedUse(node.kind, "no lowering for this op",
                                                         node.location)

    # ------------------------------------------------------------------ nodes

    def _lower_nodes(self, nodes: Sequence[Node]) -> None:
        for node in nodes:
            self._lower_node(node)

    def _lower_node(self, node: Node) -> None:
        args = [self.resolve(v) for v in node.inputs]
        if any(_poisoned(a) for a in args):
            self._poison(node)
            return
        if node.kind == "prim::If":
            self._lower_if(node, args)
            return
        folded = (self._fold_steps(node, args) if node.kind == FUSED_KIND
                  else self._fold(node, args))
        if folded is not _NOT_FOLDED:
            self._missing.pop(id(node), None)
            self._bind(node, folded)
            return
        low = lowering_for(node.kind)
        if low is None:
            self.unsupported.append(self._missing.pop(id(node)))
            self._poison(node)
            return
        if not _takes(low.fn, len(args)):
            self.unsupported.append(UnsupportedUse(
                node.kind, f"the overload {node.schema or 'of this call'} has no lowering",
                node.location))
            self._poison(node)
            return
        self.cx.node = node
        try:
            if low.in_place and isinstance(args[0], TensorValue):
                self._check_not_a_shared_view(node)
            if not low.any_rank:
                args = [self._one_dim_each(a) for a in args]
            result = low.fn(self.cx, *args)
        except Unsupported as e:
            self.unsupported.append(UnsupportedUse(node.kind, str(e), node.location))
            self._poison(node)
            return
        except BadDataError as e:
            raise ConverterBug(f"{node.kind} at {node.location}: {e}") from e
        finally:
            self.cx.node = None
        self._bind(node, result)
        baked.guard_decisions(self.cx, node, args, result)
        if low.in_place and node.inputs and (
                isinstance(args[0], TensorValue)
                or isinstance(args[0], torch.Tensor) and isinstance(result, TensorValue)):
            # (a constant the model writes its own values into is that tensor afterwards)
            self.env[node.inputs[0]] = self.env[node.outputs[0]]
            written = node.inputs[0]
            while (producer := self._whole_view(written)) is not None:
                written = producer.inputs[0]  # ``y[:, i, j] = v`` writes into y itself
                self.env[written] = self.env[node.outputs[0]]

    def _whole_view(self, value: Value) -> Node | None:
        """The ``aten::slice`` producing ``value`` when it takes the whole of its input
        (``y[:, ...]``: the same tensor), else None."""
        producer = self._producers.get(value)
        if producer is None or producer.kind != "aten::slice" or len(producer.inputs) != 5:
            return None
        x, dim, start, end, step = (self.resolve(v) for v in producer.inputs)
        if not isinstance(x, TensorValue) or not isinstance(dim, int) or step != 1 \
                or start not in (None, 0):
            return None
        size = x.shape[dim % x.rank] if x.rank else None
        whole = end is None or (isinstance(end, int) and isinstance(size, int) and end >= size)
        return producer if whole else None

    def _check_not_a_shared_view(self, node: Node) -> None:
        """An in-place op writes through a view (a slice, a reshape...) into the tensor it
        views in PyTorch; the NNAPI model holds values, not views, so that write is lost
        when the viewed tensor is read afterwards: refuse rather than answer wrongly. A
        slice of the whole tensor is the tensor: the write goes to it (``_lower_node``)."""
        position = self._order[id(node)]
        value = node.inputs[0]
        while (whole := self._whole_view(value)) is not None:
            value = whole.inputs[0]
        producer = self._producers.get(value)
        while producer is not None and producer.kind in _VIEWS:
            base = producer.inputs[0]
            if any(reader is None or self._order.get(id(reader), -1) > position
                   for reader in self.cx.users.get(base, [])):
                raise Unsupported(f"{node.kind} writes into a view ({producer.kind}) of a"
                                  " tensor the model reads again afterwards")
            producer = self._producers.get(base)

    def _one_dim_each(self, a: Any) -> Any:
        """``a`` with every tensor in an operand of one dimension per PyTorch dimension."""
        if isinstance(a, TensorValue):
            return ungroup(self.cx, a)
        if isinstance(a, (list, tuple)) and any(isinstance(x, TensorValue) for x in a):
            return type(a)(self._one_dim_each(x) for x in a)
        return a

    def _lower_if(self, node: Node, args: list[Any]) -> None:
        cond = args[0]
        if isinstance(cond, Sym) or not isinstance(cond, (bool, int)):
            self.unsupported.append(UnsupportedUse(
                node.kind, "control flow whose condition is only known at run time",
                node.location))
            self._poison(node)
            return
        block = node.blocks[0] if cond else node.blocks[1]
        self._lower_nodes(block.nodes)
        results = tuple(self.resolve(v) for v in block.outputs)
        self._bind(node, results[0] if len(results) == 1 else results)

    def _fold(self, node: Node, args: list[Any]) -> Any:
        """Evaluates an aten op whose inputs are all known constants, with PyTorch."""
        if not node.schema or not node.kind.startswith("aten::") \
                or node.kind.startswith(_NO_FOLD_PREFIXES) or not all(map(_constant, args)):
            return _NOT_FOLDED
        try:
            schema = torch._C.parse_schema(node.schema)
            packet = getattr(torch.ops.aten, schema.name.split("::", 1)[1])
            fn = getattr(packet, schema.overload_name or "default")
            positional, keywords = [], {}
            for arg, value in zip(schema.arguments, args, strict=False):
                value = _as_tensor_argument(str(arg.type), value)
                if arg.name == "layout" and isinstance(value, str):
                    # the export capture names layouts ("strided"): factories fold too
                    value = getattr(torch, value)
                if arg.kwarg_only:
                    keywords[arg.name] = value
                else:
                    positional.append(value)
            with torch.no_grad():
                result = fn(*positional, **keywords)
        except Exception:  # noqa: BLE001 - not foldable: let the lowering handle it
            return _NOT_FOLDED
        return result

    def _fold_steps(self, node: Node, args: list[Any]) -> Any:
        """Evaluates a fused node (patterns.py) step by step when its input is constant."""
        value, k = args[0], 1
        for step in node.steps:
            n = len(step.inputs) - 1
            value = self._fold(step, [value, *args[k:k + n]])
            k += n
            if value is _NOT_FOLDED:
                return _NOT_FOLDED
        return value

    def _bind(self, node: Node, result: Any) -> None:
        outputs = node.outputs
        if len(outputs) == 1:
            values = (result,)
        else:
            if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
                raise ConverterBug(f"{node.kind} at {node.location}: the lowering returned"
                                   f" {result!r} for {len(outputs)} outputs")
            values = tuple(result)
        for v, r in zip(outputs, values, strict=False):
            self._check_example(node, v, r)
            self.env[v] = r
            self.produced[v] = r
            if isinstance(r, TensorValue):
                refs = self.cx.operand_refs
                refs[r.operand] = refs.get(r.operand, 0) + 1

    def _poison(self, node: Node) -> None:
        for v in node.outputs:
            self.env[v] = POISON

    def resolve(self, v: Value) -> Any:
        if v in self.env:
            return self.env[v]
        if v.is_constant:
            return v.constant
        raise ConverterBug(f"value %{v.name} is used before it is computed")

    # ------------------------------------------------------------------ checks

    def _check_example(self, node: Node, v: Value, r: Any) -> None:
        """A lowering's result must agree with what PyTorch computed for the examples."""
        ex = v.example
        if ex is None or r is POISON:
            return
        where = f"{node.kind} at {node.location}"
        if isinstance(ex, ExampleTensor):
            if isinstance(r, TensorValue):
                if tuple(hint(d) for d in r.shape) != ex.shape:
                    raise ConverterBug(f"{where}: the lowering's output shape"
                                       f" {[hint(d) for d in r.shape]} differs from PyTorch's"
                                       f" {list(ex.shape)}")
                if r.dtype != ex.dtype:
                    raise ConverterBug(f"{where}: the lowering's output dtype {r.dtype}"
                                       f" differs from PyTorch's {ex.dtype}")
                if ex.scale and not math.isclose(r.scale, ex.scale, rel_tol=1e-5):
                    raise ConverterBug(f"{where}: output scale {r.scale} differs from"
                                       f" PyTorch's {ex.scale}")
            elif isinstance(r, torch.Tensor) and tuple(r.shape) != ex.shape:
                raise ConverterBug(f"{where}: folded shape {list(r.shape)} differs from"
                                   f" PyTorch's {list(ex.shape)}")
        elif isinstance(ex, bool) or isinstance(r, bool):
            return
        elif isinstance(ex, int) and isinstance(r, (int, Sym)) and hint(r) != ex:
            raise ConverterBug(f"{where}: computed {hint(r)}, PyTorch computed {ex}")

    # ------------------------------------------------------------------ outputs

    def _outputs(self, returned: Any) -> tuple[list[TensorValue], list[int], OutputStructure]:
        """The distinct NNAPI outputs, which of them each returned tensor is, and how the
        returned tensors nest (the graph's structure, else a flat tuple, list or tensor)."""
        if _poisoned(returned):
            return [], [], OutputStructure(TENSOR)
        if isinstance(returned, (tuple, list)):
            items = list(returned)
            structure = OutputStructure.flat(len(items), TUPLE if isinstance(
                returned, tuple) else LIST)
        else:
            items, structure = [returned], OutputStructure(TENSOR)
        if self.graph.structure is not None:
            if self.graph.structure.leaf_count != len(items):
                raise ConverterBug(f"the graph returns {len(items)} values for the"
                                   f" {self.graph.structure.leaf_count} tensors of"
                                   f" {self.graph.structure.describe()}")
            structure = self.graph.structure
        outputs: list[TensorValue] = []
        output_map: list[int] = []
        for i, item in enumerate(items):
            if not isinstance(item, TensorValue):
                self.unsupported.append(UnsupportedUse(
                    "return", f"output {i} is a {type(item).__name__}, not a tensor computed"
                    " by the model", "the model's return statement"))
                continue
            if item.is_quantized and item.dtype not in self.runtime_dtypes:
                self.unsupported.append(UnsupportedUse(
                    "return", f"output {i} is a {item.dtype} tensor, which PyTorch's NNAPI"
                    " runtime cannot return; dequantize it in the model",
                    "the model's return statement"))
                continue
            model_inputs = {t.operand for t in self._inputs_of_model()}
            if self.cx.model.operands[item.operand].lifetime is Lifetime.CONSTANT:
                self.unsupported.append(UnsupportedUse(
                    "return", f"output {i} is a constant", "the model's return statement"))
                continue
            same = [k for k, o in enumerate(outputs) if o.operand == item.operand]
            if item.operand in model_inputs or any(
                    outputs[k].layout != item.layout or outputs[k].shape != item.shape
                    for k in same):
                # an NNAPI output must be written by an operation, once, in one layout
                try:
                    item = self._fresh_copy(item)
                except Unsupported as e:
                    self.unsupported.append(UnsupportedUse("return", f"output {i}: {e}",
                                                           "the model's return statement"))
                    continue
                same = []
            if same:
                output_map.append(same[0])
            else:
                outputs.append(item)
                output_map.append(len(outputs) - 1)
        return outputs, output_map, structure

    def _fresh_copy(self, t: TensorValue) -> TensorValue:
        """``t`` in a new operand: a TRANSPOSE to PyTorch's order, or a same-shape RESHAPE."""
        cx = self.cx
        if not lay.is_identity(t.layout):
            copy = cx.contiguous(t)
            if copy.operand != t.operand:
                return copy
        if t.is_float or t.is_quantized:
            out = cx.new_tensor(t.shape, t.dtype, t.layout, t.scale, t.zero_point, t.groups)
            cx.operation(Op.RESHAPE,
                         dict(input=t, shape=cx.shape_vector(out.nnapi_shape or (1,))),
                         dict(output=out))
            return out
        raise Unsupported(f"returning a {t.dtype} input unchanged")

    def _inputs_of_model(self) -> list[TensorValue]:
        return [self.env[v] for v in self.graph.inputs if isinstance(self.env.get(v),
                                                                       TensorValue)]


# Ops whose result shares memory with their first input in PyTorch.
_VIEWS = {"aten::slice", "aten::select", "aten::narrow", "aten::view", "aten::reshape",
          "aten::_reshape_alias", "aten::transpose", "aten::permute", "aten::t",
          "aten::unsqueeze", "aten::squeeze", "aten::expand", "aten::as_strided",
          "aten::diagonal", "aten::unflatten", "aten::flatten", "aten::view_as",
          "aten::alias", "aten::detach", "aten::swapaxes", "aten::movedim",
          "aten::unfold", "aten::numpy_T", "aten::expand_as", "aten::contiguous"}

# Node kinds handled by the driver itself.
_STRUCTURAL = {"prim::If"}


def _quantized_on_host(value: Value, readers: Mapping[Value, Sequence[Node | None]]
                       ) -> tuple[float, int] | None:
    """(scale, zero point) when every reader of float input ``value`` quantizes it to quint8
    with the same constant parameters. NNAPI then takes the input quint8 and the wrapper
    quantizes it on the host, exactly as PyTorch does: NNAPI's QUANTIZE needs feature level
    3, while many quantized models need nothing else above level 1. Not for qint8, which
    PyTorch's NNAPI runtime cannot pass (values.RUNTIME_DTYPES): the model quantizes it."""
    from ..capture.graph import SCALAR_TYPES

    found = set()
    for node in readers.get(value, []):
        if node is None or node.kind != "aten::quantize_per_tensor" or len(node.inputs) != 4 \
                or node.inputs[0] is not value or not all(v.is_constant for v in node.inputs[1:]):
            return None
        scale, zero_point, dtype = (v.constant for v in node.inputs[1:])
        if not isinstance(dtype, int) or dtype != SCALAR_TYPES["quint8"]:
            return None
        try:
            found.add((float(scale), int(zero_point)))
        except (TypeError, ValueError, RuntimeError):  # not numbers (or 1-element tensors)
            return None
    return found.pop() if len(found) == 1 else None


def value_readers(graph: Graph) -> dict[Value, list[Node | None]]:
    """Each value's reading nodes in program order (the graph's return, None, counts as
    one)."""
    readers: dict[Value, list[Node | None]] = {}
    for node in graph.walk():
        for v in node.inputs:
            readers.setdefault(v, []).append(node)
        for b in node.blocks:
            for v in b.outputs:
                readers.setdefault(v, []).append(node)
    readers.setdefault(graph.output, []).append(None)
    return readers


@functools.cache
def _arity(fn: Callable[..., Any]) -> tuple[int, float]:
    """How many arguments after the converter a lowering takes: (at least, at most)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return sum(p.default is p.empty for p in params if p.kind is not p.VAR_POSITIONAL), \
            math.inf
    return sum(p.default is p.empty for p in params), len(params)


def _takes(fn: Callable[..., Any], count: int) -> bool:
    """True when a lowering accepts ``count`` node inputs: an overload of the op with another
    argument list is reported as unsupported instead of failing in the call."""
    least, most = _arity(fn)
    return least <= count <= most


def _poisoned(a: Any) -> bool:
    if a is POISON:
        return True
    if isinstance(a, (list, tuple)):
        return any(_poisoned(x) for x in a)
    return False


def _as_tensor_argument(type_name: str, value: Any) -> Any:
    """A number where the op takes a tensor is a 0-dim tensor, as ``prim::NumToTensor``
    made it (its lowering keeps sizes as numbers), so size arithmetic done with tensors
    (``torch.stack([h, w])``) folds too."""
    if type_name == "Tensor" and _is_plain_number(value):
        return _number_tensor(value)
    if type_name == "List[Tensor]" and isinstance(value, (list, tuple)) and value \
            and all(_is_plain_number(v) for v in value):
        return [_number_tensor(v) for v in value]
    return value


def _is_plain_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float))


def _number_tensor(v: Any) -> torch.Tensor:
    dtype = torch.bool if isinstance(v, bool) else torch.int64 if isinstance(v, int) \
        else torch.float64
    return torch.scalar_tensor(v, dtype=dtype)


def _constant(a: Any) -> bool:
    if isinstance(a, (TensorValue, Sym)):
        return False
    if isinstance(a, (list, tuple)):
        return all(_constant(x) for x in a)
    return True


def _input_unsupported(index: int, reason: str) -> ConversionError:
    """A model input NNAPI cannot take: the conversion fails as for an unsupported op."""
    return ConversionError([UnsupportedUse("model input", f"input {index}: {reason}",
                                           "the model's inputs")])


# Makes the Lowerer of a graph and its input specs (the CPU fallback records per node).
LowererFactory = Callable[[Graph, Sequence[InputSpec]], Lowerer]


def lower(graph: Graph, specs: Sequence[InputSpec], *,
          relax_float32_to_float16: bool = False,
          make_lowerer: LowererFactory = Lowerer) -> Lowered:
    return make_lowerer(graph, specs).run(relax_float32_to_float16)


def example_spec(x: torch.Tensor, nhwc: bool = False, flexible: Sequence[int] = ()) -> InputSpec:
    dtype = dtype_name(x.dtype)
    scale, zp = 0.0, 0
    if x.is_quantized:
        scale, zp = float(x.q_scale()), int(x.q_zero_point())
    return InputSpec(ExampleTensor(tuple(x.shape), dtype, scale, zp), nhwc,
                     tuple(sorted(d % x.dim() for d in flexible)))

