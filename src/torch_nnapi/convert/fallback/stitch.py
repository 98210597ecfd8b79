"""CPU fallback, last step: one TorchScript module that runs the regions and the CPU nodes.

The module's ``forward`` is the captured TorchScript graph itself, edited: each region's
nodes are replaced by one call of the region's
:class:`~..torchscript.module.NnapiProgram` submodule (``region_0``, ``region_1``...: a
list of tensors in, a list out), the CPU nodes stay as they are, and everything is put in
the partition's running order.

Why edit the graph rather than generate TorchScript source for the stitching ``forward``:
the CPU nodes are whatever the model holds (control flow with blocks, loops, custom ops,
overloads TorchScript already resolved, frozen tensor constants), and the graph keeps them
exactly as PyTorch compiled them. Source code would have to print each node back into
Python syntax, turn its tensor constants into attributes and rebuild its blocks, one more
place for a model to break. The edited graph becomes the ``forward`` of a scripted module
holding the region programs; TorchScript's own printer then writes it out when the module
is saved, and the module is saved to memory and loaded back here, so what ``convert``
returns is what a file holds: a module that loads in a fresh process, in the lite
interpreter, and takes bundled inputs like any other.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Sequence

import torch

from ..capture.graph import Node, Value
from ..capture.script import Captured
from ..errors import ConverterBug
from ..outputs import (
    STRUCTURE_METHOD,
    TENSOR,
    OutputStructure,
    define_method,
    define_structure_method,
)
from ..regions.partition import Partition, Region
from ..torchscript.module import NnapiProgram
from .bodies import Body, body_name, call_body

REGION_PREFIX = "region_"


def region_name(index: int) -> str:
    return f"{REGION_PREFIX}{index}"


def build_partitioned_module(captured: Captured, part: Partition,
                             programs: Sequence[NnapiProgram], report: str,
                             bodies: Sequence[Body] = ()) -> torch.jit.ScriptModule:
    """The module running ``part``: ``programs[i]`` runs ``part.regions[i]``, ``bodies[i]``
    (submodule ``body_<i>``) a block of a CPU loop or branch; ``report`` (JSON) is kept as
    the module's ``partition`` attribute for ``torch-nnapi inspect``. The captured graph
    returns the model's tensors flat: ``forward`` nests them again as the model did (the
    module's ``structure_outputs``, inlined). A block's graph (no ``structure``) returns its
    values, numbers and lists among them, as they are."""
    structure = captured.graph.structure

    # A new class per conversion: ``define`` adds the method to the class.
    class PartitionedModule(torch.nn.Module):
        """A PyTorch model converted by torch-nnapi: NNAPI regions and CPU nodes."""

        def __init__(self) -> None:
            super().__init__()
            for i, program in enumerate(programs):
                self.add_module(region_name(i), program)
            for i, body in enumerate(bodies):
                self.add_module(body_name(i), body.module)
            self.partition = report
            if structure is not None:
                self.output_structure = structure.to_json()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.script(PartitionedModule())
    script = captured.script
    inputs = list(script.inputs())[1:]
    params = ", ".join(f"input_{i}: {v.type().annotation_str}" for i, v in enumerate(inputs))
    stub = "    raise RuntimeError('replaced by the partitioned graph')\n"
    if structure is None:
        returns = next(iter(script.outputs())).type().annotation_str
        module.define(f"def forward(self, {params}) -> {returns}:\n{stub}")
        stitched = _stitch(captured, part, module, bodies)
    else:
        ret = define_structure_method(module, structure)
        define_method(module, f"def forward(self, {params}) -> {ret.annotation}:\n{stub}",
                      ret.names)
        stitched = _stitch(captured, part, module, bodies)
        _nest_outputs(stitched, structure, getattr(module, STRUCTURE_METHOD).graph)
    _replace_body(module.graph, stitched)
    return _reloaded(module)


def _nest_outputs(graph: torch._C.Graph, structure: OutputStructure,
                  nesting: torch._C.Graph) -> None:
    """Makes ``graph``, returning the model's tensors flat, return them nested: the graph
    of ``structure_outputs`` (``nesting``) inlined on a list of them."""
    out = next(iter(graph.outputs()))
    end = graph.return_node()
    if structure.kind == TENSOR:
        leaves = [out]
    elif out.node().kind() == "prim::TupleConstruct":
        leaves = list(out.node().inputs())
    else:
        unpack = graph.create("prim::TupleUnpack", [out], structure.leaf_count)
        unpack.insertBefore(end)
        leaves = list(unpack.outputs())
        for v in leaves:
            v.setType(torch._C.TensorType.get())
    pack = graph.create("prim::ListConstruct", leaves, 1)
    pack.output().setType(torch._C.ListType(torch._C.TensorType.get()))
    pack.insertBefore(end)
    graph.eraseOutput(0)
    graph.setInsertPoint(end)
    (nested,) = graph.insertGraph(nesting, [list(graph.inputs())[0], pack.output()])
    graph.registerOutput(nested)
    torch._C._jit_pass_dce(graph)
    graph.lint()


def _stitch(captured: Captured, part: Partition, module: torch.jit.RecursiveScriptModule,
            bodies: Sequence[Body]) -> torch._C.Graph:
    """A copy of the captured TorchScript graph with the regions and the converted bodies
    replaced by calls."""
    graph = captured.script.copy()
    copy_of = _node_map(captured.script, graph)
    value_of = _value_map(captured.script, graph)
    for i, body in enumerate(bodies):
        block = list(copy_of[captured.nodes[body.node]].blocks())[body.block]
        call_body(graph, block, list(graph.inputs())[0], body_name(i),
                  getattr(module, body_name(i)))

    current: dict[Value, torch._C.Value] = {}  # region outputs: read from the calls

    def ts_value(v: Value) -> torch._C.Value:
        return current.get(v) or value_of[captured.values[v].unique()]

    def ts_nodes(node: Node) -> list[torch._C.Node]:
        steps = node.steps or [node]
        return [copy_of[captured.nodes[s]] for s in steps]

    this = list(graph.inputs())[0]
    this.setType(module._c._type())
    end = graph.return_node()
    placed = 0
    for v, constant in part.constants.items():
        if v in captured.values:
            old = ts_value(v)
            if old.uses():
                with graph.insert_point_guard(next(iter(graph.nodes()))):
                    # insertConstant is not in torch's stubs
                    new: torch._C.Value = graph.insertConstant(  # type: ignore[attr-defined]
                        constant)
                if isinstance(constant, torch.Tensor) and _written(old):
                    new = _fresh_copy(graph, new, end)
                    placed += 1
                old.replaceAllUsesWith(new)
    # Everything that runs goes to the end in running order (the fresh copies first); what
    # stays behind (the regions' nodes, shared nodes the CPU does not need) is removed.
    for item in part.schedule:
        if isinstance(item, Region):
            placed += _call_region(graph, this, module, part.regions.index(item), item,
                                   ts_value, current, end)
        else:
            for n in ts_nodes(item):
                n.moveBefore(end)
                placed += 1
    left = list(graph.nodes())
    for n in reversed(left[:len(left) - placed]):
        if n.kind() == "prim::Constant":
            continue
        for out in n.outputs():
            if out.uses():
                raise ConverterBug(f"the CPU needs %{out.debugName()}, which its region does"
                                   " not return")
        n.destroy()
    torch._C._jit_pass_dce(graph)
    graph.lint()
    return graph


def _call_region(graph: torch._C.Graph, this: torch._C.Value,
                 module: torch.jit.RecursiveScriptModule, index: int, region: Region,
                 ts_value: Callable[[Value], torch._C.Value],
                 current: dict[Value, torch._C.Value], end: torch._C.Node) -> int:
    """``outputs = self.region_<index>([inputs])`` before ``end``, the region's outputs
    then read from the call; returns the number of nodes added."""
    program = getattr(module, region_name(index))
    tensors = torch._C.ListType(torch._C.TensorType.get())
    get = graph.create("prim::GetAttr", [this], 1)
    get.s_("name", region_name(index))
    get.output().setType(program._c._type())
    pack = graph.create("prim::ListConstruct", [ts_value(v) for v in region.inputs], 1)
    pack.output().setType(tensors)
    call = graph.create("prim::CallMethod", [get.output(), pack.output()], 1)
    call.s_("name", "forward")
    call.output().setType(tensors)
    unpack = graph.create("prim::ListUnpack", [call.output()], len(region.outputs))
    for node in (get, pack, call, unpack):
        node.insertBefore(end)
    for v, out in zip(region.outputs, unpack.outputs(), strict=False):
        out.setType(torch._C.TensorType.get())
        ts_value(v).replaceAllUsesWith(out)
        current[v] = out
    return 4



def _written(value: torch._C.Value) -> bool:
    """Whether an op writes into ``value`` or into a view of it (``offset += n`` on a tensor
    torchvision's RPN computed from sizes): read from each user's schema."""
    for use in value.uses():
        schema = _schema(use.user)
        if schema is None or use.offset >= len(schema.arguments):
            continue
        alias = schema.arguments[use.offset].alias_info
        if alias is None:
            continue
        if alias.is_write:
            return True
        views = [o for o in use.user.outputs() if isinstance(o.type(), torch._C.TensorType)]
        if any(_written(v) for v in views):  # a view (select, slice...) shares the storage
            return True
    return False


def _schema(node: torch._C.Node) -> torch._C.FunctionSchema | None:
    try:
        return torch._C.parse_schema(node.schema())
    except RuntimeError:  # prim:: nodes and others without one ("(no schema)")
        return None


def _fresh_copy(graph: torch._C.Graph, constant: torch._C.Value, before: torch._C.Node
                ) -> torch._C.Value:
    """``constant`` cloned at each run, before ``before``: a constant changed in place would
    carry the change into the next run."""
    with graph.insert_point_guard(constant.node()):
        none = graph.insertConstant(None)  # type: ignore[attr-defined]  # not in torch's stubs
    clone = graph.create("aten::clone", [constant, none], 1).insertBefore(before)
    clone.output().setType(constant.type())
    return clone.output()


def _node_map(original: torch._C.Graph, copy: torch._C.Graph
              ) -> dict[torch._C.Node, torch._C.Node]:
    """Each top-level node of ``original`` -> the same node in its ``copy``."""
    return dict(zip(original.nodes(), copy.nodes(), strict=True))


def _value_map(original: torch._C.Graph, copy: torch._C.Graph) -> dict[int, torch._C.Value]:
    """Each top-level value of ``original`` (by ``unique()``) -> the same value in ``copy``."""
    found = {a.unique(): b for a, b in zip(original.inputs(), copy.inputs(), strict=True)}
    for a, b in zip(original.nodes(), copy.nodes(), strict=True):
        found.update((x.unique(), y) for x, y in zip(a.outputs(), b.outputs(), strict=True))
    return found


def _replace_body(target: torch._C.Graph, body: torch._C.Graph) -> None:
    """Makes ``target`` (a method's graph, same inputs as ``body``) compute ``body``."""
    while len(list(target.outputs())):
        target.eraseOutput(0)
    for n in reversed(list(target.nodes())):
        n.destroy()
    target.setInsertPoint(target.return_node())
    for out in target.insertGraph(body, list(target.inputs())):
        target.registerOutput(out)
    target.lint()


def _reloaded(module: torch.jit.ScriptModule) -> torch.jit.ScriptModule:
    """The module saved to memory and loaded back: what a file would hold."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning,
                                message=r"`torch\.jit\.(save|load)` is deprecated")
        torch.jit.save(module, buffer)
        buffer.seek(0)
        # torch.jit.load has no annotations
        loaded: torch.jit.ScriptModule = torch.jit.load(buffer)  # type: ignore[no-untyped-call]
    return loaded
