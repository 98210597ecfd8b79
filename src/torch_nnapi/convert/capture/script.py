"""Capture: turn a PyTorch model into a small, frozen graph the lowerings walk.

An ``nn.Module`` is traced (a ScriptModule is taken as is), then frozen: parameters become
constants, submodules are inlined, and TorchScript's frozen optimizations fold batch norms
into the preceding convolution or linear layer. The TorchScript graph is then copied into
plain Python objects (:class:`Graph`, :class:`Node`, :class:`Value`), with every
``prim::Constant`` folded into the value that uses it.

The graph is also *probed*: run once on the example inputs with every intermediate tensor
and integer returned, so each value carries its example shape, dtype and quantization
parameters. The converter checks each lowering's result against them, which turns a wrong
shape computation into an error naming the node instead of a wrong answer on a phone.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from ...nnapi.errors import counted
from ..outputs import OutputStructure
from .flat_outputs import (
    WRAPPED,
    FlatOutputs,
    argument_names,
    flatten_return,
    is_flat_return,
    script_structure,
)
from .graph import Block, ExampleTensor, Graph, Node, Value

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


# ------------------------------------------------------------------------------ entry point


def as_example_tuple(example_inputs: object) -> tuple[torch.Tensor, ...]:
    """The example inputs as a tuple (the caller checks that each is a tensor)."""
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (list, tuple)):
        return tuple(example_inputs)
    raise TypeError("example_inputs must be a tensor or a tuple/list of tensors, got"
                    f" {type(example_inputs).__name__}")


def freeze(model: object, example_inputs: tuple[torch.Tensor, ...]
           ) -> tuple[torch.jit.ScriptModule, OutputStructure | None]:
    """Traces (unless already TorchScript) and freezes ``model`` in eval mode; a traced
    model returns its tensors flat, and its output structure comes with it (None for a
    TorchScript model, whose graph returns its structure)."""
    structure = None
    if isinstance(model, torch.jit.ScriptModule):
        script = model
    elif isinstance(model, torch.nn.Module):
        model = model.eval()
        with _without_fused_attention():
            script, structure = trace(model, example_inputs)
    else:
        raise TypeError(f"expected an nn.Module or a ScriptModule, got {type(model).__name__}")
    if _is_frozen(script):
        return script, structure
    if script.training:
        script = script.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        frozen: torch.jit.ScriptModule = torch.jit.freeze(script)
    return frozen, structure


def trace(module: torch.nn.Module, example_inputs: tuple[torch.Tensor, ...]
          ) -> tuple[torch.jit.ScriptModule, OutputStructure]:
    """``torch.jit.trace`` without its check (the capture probes the graph itself) and its
    warnings, of ``module`` returning its tensors flat (:class:`FlatOutputs`): the traced
    module and how its outputs nest."""
    flat = FlatOutputs(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        # torch.jit.trace has no annotations
        traced: torch.jit.ScriptModule = torch.jit.trace(  # type: ignore[no-untyped-call]
            flat, example_inputs, check_trace=False)
    names = argument_names(module)
    inputs = list(traced.graph.inputs())[1:]
    if len(names) == len(inputs):
        for value, name in zip(inputs, names, strict=True):
            value.setDebugName(name)
    assert flat.structure is not None, "tracing runs forward"
    return traced, flat.structure


@contextlib.contextmanager
def _without_fused_attention() -> Iterator[None]:
    """Traces nn.MultiheadAttention and nn.TransformerEncoderLayer through their composed
    path (the same arithmetic) rather than their inference fast path, a single fused op
    (``aten::_transformer_encoder_layer_fwd``) taken when no parameter needs gradients."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "set_fastpath_enabled"):
        yield
        return
    enabled = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(enabled)


def _is_frozen(script: torch.jit.ScriptModule) -> bool:
    try:
        return bool(script._c._has_method("forward")) \
            and not any(True for _ in script.parameters()) \
            and not any(True for _ in script.buffers()) and not list(script.named_children()) \
            and not script._c.hasattr("training")  # freezing drops the attribute
    except Exception:  # noqa: BLE001 - treat anything odd as not frozen
        return False


@contextmanager
def quantized_engine(name: str | None) -> Iterator[None]:
    """PyTorch's quantized kernels set to ``name`` for the body (None: unchanged)."""
    previous = torch.backends.quantized.engine
    if name is None or name == previous:
        yield
        return
    if name not in torch.backends.quantized.supported_engines:
        raise ValueError(f"quantized engine {name!r} is not available in this PyTorch (it has"
                         f" {', '.join(torch.backends.quantized.supported_engines)})")
    torch.backends.quantized.engine = name
    try:
        yield
    finally:
        torch.backends.quantized.engine = previous


def alternate_engine() -> str | None:
    """Another of PyTorch's quantized engines than the current one, to tell a wrong
    reference from a wrong conversion (x86 or fbgemm beside qnnpack, and the reverse)."""
    current = torch.backends.quantized.engine
    for name in ("x86", "fbgemm", "qnnpack", "onednn"):
        if name != current and name in torch.backends.quantized.supported_engines:
            return name
    return None


def capture(model: object, example_inputs: object, keep_values: bool = False,
            alternate: str | None = None) -> Graph:
    """The frozen graph of ``model``, probed on ``example_inputs``; with ``keep_values``
    each value also keeps its example tensor (``Value.tensor``), for layer-wise checks, and
    with ``alternate`` (a quantized engine) the tensor that engine computes
    (``Value.alternate``)."""
    return capture_script(model, example_inputs, keep_values, alternate=alternate).graph


@dataclass(eq=False)
class Captured:
    """A captured graph with the TorchScript graph it copies: the CPU fallback keeps the
    TorchScript nodes NNAPI cannot run and probes the graph again on other inputs."""

    graph: Graph
    script: torch._C.Graph  # frozen and inlined; its first input is the module
    nodes: dict[Node, torch._C.Node]  # each top-level node's TorchScript node
    values: dict[Value, torch._C.Value]  # each top-level value's TorchScript value
    examples: tuple[torch.Tensor, ...]  # the example inputs it was probed on

    def without_mutation(self) -> Captured:
        """The same model with in-place operations made functional where TorchScript
        proves it safe (copied and probed again; ``self`` when nothing mutates)."""
        if not _has_mutation(self.script):
            return self
        return _captured(self.script.copy(), self.examples, keep_values=False,
                         remove_mutation=True, structure=self.graph.structure)

    def probe(self, inputs: tuple[torch.Tensor, ...]
              ) -> dict[Value, ExampleTensor | bool | int | float | None] | None:
        """What every top-level tensor and number is when the graph runs on ``inputs``
        (``example_of``: shapes and dtypes), or None if the graph fails on them."""
        by_script = {v.unique(): value for value, v in self.values.items()}
        results = _run_probe(self.script, inputs, keep_values=False)
        if results is None:
            return None
        return {by_script[o.unique()]: example_of(x) for o, x in results
                if o.unique() in by_script}


def capture_script(model: object, example_inputs: object, keep_values: bool = False,
                   remove_mutation: bool = False, alternate: str | None = None,
                   structure: OutputStructure | None = None) -> Captured:
    """:func:`capture`, keeping the TorchScript graph; ``remove_mutation`` first rewrites
    in-place operations as functional ones where TorchScript can prove it safe.
    ``structure``: how the outputs of a module traced by :func:`trace` nest (found
    otherwise)."""
    examples = as_example_tuple(example_inputs)
    for i, x in enumerate(examples):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"example input {i} must be a tensor, got {type(x).__name__}")
    frozen, traced_structure = freeze(model, examples)
    structure = structure or traced_structure  # traced flat
    nested = structure is None  # TorchScript's own: its graph returns the structure
    if structure is None:
        structure = script_structure(frozen, frozen.graph, examples)
    if frozen is model and (not nested or is_flat_return(frozen.graph, structure)):
        # the caller's frozen module: its graph is left as it is
        return _captured(frozen.graph, examples, keep_values, remove_mutation, structure,
                         alternate)
    script = frozen.graph.copy()
    if frozen is not model:
        _release(frozen.graph)
    if nested:
        flatten_return(script, structure)
    return _captured(script, examples, keep_values, remove_mutation, structure, alternate)


def _release(graph: torch._C.Graph) -> None:
    """Empties the graph of a module this capture froze. PyTorch keeps a frozen module's
    compiled graph, with the weights its constants hold, after the module is gone (a copy of
    the weights per conversion); the capture works on a copy that shares those weights."""
    while graph.return_node().inputsSize():
        graph.eraseOutput(0)
    for node in reversed(list(graph.nodes())):
        node.destroy()


def _captured(ts_graph: torch._C.Graph, examples: tuple[torch.Tensor, ...], keep_values: bool,
              remove_mutation: bool, structure: OutputStructure | None,
              alternate: str | None = None) -> Captured:
    torch._C._jit_pass_inline(ts_graph)
    if remove_mutation:
        torch._C._jit_pass_remove_mutation(ts_graph)
    torch._C._jit_pass_constant_propagation(ts_graph)
    torch._C._jit_pass_dce(ts_graph)
    ts_inputs = list(ts_graph.inputs())[1:]
    if len(ts_inputs) != len(examples):
        raise TypeError(f"the model's forward takes {counted(len(ts_inputs), 'input')}, but"
                        f" {counted(len(examples), 'example input')} given")
    copier = _Copier()
    graph = copier.copy(ts_graph)
    graph.structure = structure
    _probe(ts_graph, examples, graph, copier, keep_values)
    if keep_values and alternate is not None:
        with quantized_engine(alternate):
            _probe(ts_graph, examples, graph, copier, keep_values, into="alternate")
    values = {copier.values[v.unique()]: v for v in ts_inputs}
    for ts_node in ts_graph.nodes():
        for v in ts_node.outputs():
            if v.unique() in copier.values:
                values[copier.values[v.unique()]] = v
    return Captured(graph, ts_graph, copier.nodes_of, values, examples)


def _has_mutation(g: torch._C.Graph) -> bool:
    """Whether a node (in a block too) writes one of its inputs in place."""
    def visit(block_nodes: Iterable[torch._C.Node]) -> bool:
        for n in block_nodes:
            try:
                schema = str(n.schema())
            except RuntimeError:
                schema = ""
            if "!" in schema.split("->", 1)[0]:
                return True
            if any(visit(b.nodes()) for b in n.blocks()):
                return True
        return False
    return visit(g.nodes())


# ------------------------------------------------------------------------------ copying


class _Copier:
    def __init__(self) -> None:
        self.values: dict[int, Value] = {}
        self.nodes_of: dict[Node, torch._C.Node] = {}  # top-level nodes only

    def value(self, v: torch._C.Value) -> Value:
        key = v.unique()
        found = self.values.get(key)
        if found is None:
            t = v.type()
            found = Value(v.debugName(), str(t), t.kind())
            node = v.node()
            if node.kind() == "prim::Constant":
                found.constant = _constant_value(v)
            self.values[key] = found
        return found

    def copy(self, g: torch._C.Graph) -> Graph:
        inputs = [self.value(v) for v in list(g.inputs())[1:]]
        nodes = self.nodes(g.nodes(), top_level=True)
        (out,) = list(g.outputs())
        return Graph(inputs, nodes, self.value(out))

    def nodes(self, ts_nodes: Iterable[torch._C.Node], top_level: bool = False) -> list[Node]:
        nodes = []
        for n in ts_nodes:
            if n.kind() == "prim::Constant":
                for o in n.outputs():
                    self.value(o)
                continue
            try:
                schema = str(n.schema())
            except RuntimeError:
                schema = ""
            if schema == "(no schema)":
                schema = ""
            node = Node(n.kind(), [self.value(v) for v in n.inputs()],
                        [self.value(v) for v in n.outputs()], source_location(n), schema)
            for b in n.blocks():
                node.blocks.append(Block(self.nodes(b.nodes()),
                                         [self.value(v) for v in b.outputs()]))
            nodes.append(node)
            if top_level:
                self.nodes_of[node] = n
        return nodes


def _constant_value(v: torch._C.Value) -> Any:
    value = v.toIValue()
    if isinstance(value, torch.device):
        return str(value)
    return value


_TRACED_FRAME = re.compile(r"^(.+?)\((\d+)\): (\S+)$")
_SCRIPTED_FRAME = re.compile(r'File "(.+?)", line (\d+)')


def source_location(node: torch._C.Node) -> str:
    """Where a node comes from, in the user's code where possible: ``file:line (function)``."""
    text = repr(node.sourceRange())
    text = text[1:-1] if text[:1] in "'\"" else text
    text = text.encode().decode("unicode_escape") if "\\n" in text else text
    scope = ""
    try:
        scope_name = node.scopeName()
    except RuntimeError:
        scope_name = ""
    if scope_name:
        # the model's own scopes, not those of the FlatOutputs it was traced in
        parts = [p.removeprefix(f"{WRAPPED}.") for p in
                 scope_name.replace("__module.", "").split("/") if p and p != WRAPPED]
        if parts:
            scope = f", module {parts[-1]}"
    frames = [m for line in text.splitlines() if (m := _TRACED_FRAME.match(line.strip()))]
    if frames:
        user = next((m for m in frames if not m.group(1).startswith((_TORCH_DIR, _OWN_DIR))),
                    frames[0])
        return f"{user.group(1)}:{user.group(2)} ({user.group(3)}){scope}"
    m = _SCRIPTED_FRAME.search(text)
    if m:
        lines = text.splitlines()
        code = ""
        for i, line in enumerate(lines):
            if "<--- HERE" in line and i > 0:
                code = lines[i - 1].strip()
                break
        return f"{m.group(1)}:{m.group(2)}" + (f": {code}" if code else "") + scope
    return "<unknown location>" + scope


# ------------------------------------------------------------------------------ probing


def example_of(x: object) -> ExampleTensor | bool | int | float | None:
    """What a value is on the example inputs (``Value.example``): a tensor's properties, a
    number as is, None for anything else."""
    if isinstance(x, torch.Tensor):
        dtype = str(x.dtype).replace("torch.", "")
        scale, zp = 0.0, 0
        if x.is_quantized and x.qscheme() in (torch.per_tensor_affine,
                                               torch.per_tensor_symmetric):
            scale, zp = float(x.q_scale()), int(x.q_zero_point())
        return ExampleTensor(tuple(x.shape), dtype, scale, zp)
    if isinstance(x, (bool, int, float)):
        return x
    return None


def _probe(ts_graph: torch._C.Graph, examples: tuple[torch.Tensor, ...], graph: Graph,
           copier: _Copier, keep_values: bool = False, into: str = "tensor") -> None:
    """Runs the graph once, returning every top-level tensor and number, to record examples
    (and with ``keep_values`` the tensors, in each value's attribute ``into``)."""
    results = _run_probe(ts_graph, examples, keep_values)
    if results is None:
        return  # probing is a check; conversion works without it
    if into == "tensor":
        for v, x in zip(graph.inputs, examples, strict=False):
            v.example = example_of(x)
    for o, x in results:
        value = copier.values.get(o.unique())
        if value is not None:
            if into == "tensor":
                value.example = example_of(x)
            if keep_values and isinstance(x, torch.Tensor):
                setattr(value, into, x.detach().clone())


def standalone_function(name: str, graph: torch._C.Graph) -> Callable[..., Any]:
    """``graph`` as a TorchScript function in a compilation unit of its own, freed with the
    function: ``torch._C._create_function_from_graph`` registers it in PyTorch's global
    unit, which keeps it, and the weights its constants hold, for the life of the process."""
    function: Callable[..., Any] = torch._C.CompilationUnit().create_function(name, graph)
    return function


def fresh(x: Any) -> Any:
    """A copy of an input for one run: a graph may change its inputs in place (a loop
    body's example inputs include the lists and numbers its loop carries)."""
    return x.clone() if isinstance(x, torch.Tensor) else copy.deepcopy(x)


def capture_body(ts_graph: torch._C.Graph, examples: tuple[Any, ...]) -> Captured:
    """A loop's or branch's block lifted into a graph of its own (``fallback/bodies.py``),
    captured like a model: ``examples`` may hold numbers and lists as well as tensors."""
    return _captured(ts_graph, examples, keep_values=False, remove_mutation=False,
                     structure=None)


def probing(graph: torch._C.Graph, wanted: list[torch._C.Value]) -> None:
    """Makes ``graph`` (a copy of a module's) a function for a probe: without its module
    input, returning a tuple of ``wanted``."""
    while graph.return_node().inputsSize():
        graph.eraseOutput(0)
    tup = graph.create("prim::TupleConstruct", wanted, 1)
    tup.output().setType(torch._C.TupleType([v.type() for v in wanted]))
    tup.insertBefore(graph.return_node())
    graph.registerOutput(tup.output())
    graph.eraseInput(0)


def _run_probe(ts_graph: torch._C.Graph, examples: tuple[torch.Tensor, ...], keep_values: bool
               ) -> list[tuple[torch._C.Value, Any]] | None:
    """(TorchScript value, what it is) for every top-level tensor and number when the graph
    runs on ``examples``; None when it fails on them."""
    g = ts_graph.copy()
    originals, wanted = [], []
    for n, n_copy in zip(list(ts_graph.nodes()), list(g.nodes()), strict=True):
        if n.kind() == "prim::Constant":
            continue
        for o, o_copy in zip(n.outputs(), n_copy.outputs(), strict=True):
            if o.type().kind() in ("TensorType", "IntType", "FloatType", "BoolType"):
                originals.append(o)
                if keep_values and o.type().kind() == "TensorType":
                    # a snapshot, in case a later in-place op changes the tensor
                    none = g.create("prim::Constant", [], 1)
                    none.output().setType(torch._C.NoneType.get())
                    clone = g.create("aten::clone", [o_copy, none.output()], 1)
                    clone.output().setType(o_copy.type())
                    none.insertAfter(n_copy)
                    clone.insertAfter(none)
                    o_copy = clone.output()
                wanted.append(o_copy)
    probing(g, wanted)
    try:
        fn = standalone_function("torch_nnapi_probe", g)
        # one run in the plain interpreter: the JIT's optimizing passes would cost far more
        # than they save on a graph run once (seconds on large models)
        with torch.no_grad(), torch.jit.optimized_execution(False):
            results = fn(*[fresh(x) for x in examples])
    except Exception:  # noqa: BLE001 - the graph does not run on these inputs
        return None
    if not isinstance(results, tuple):
        results = (results,)
    return list(zip(originals, results, strict=False))
