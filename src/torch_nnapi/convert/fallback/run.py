"""A partitioned module taken apart again: its regions, their inputs, its CPU nodes alone.

Tools need what PyTorch's NNAPI runtime hides inside a partitioned module's ``forward``:
``run --host`` runs each region on the host runtime instead, and ``bench`` times regions
and CPU nodes separately. Both come from the module's own ``forward`` graph (as saved, so
any converted file works): each ``self.region_<k>.forward(...)`` call is found, and copies
of the graph are made into functions where region calls become inputs:

* :func:`region_inputs` is the graph up to call ``k``, returning what region ``k`` takes,
  given the outputs of the calls before it (the CPU nodes before ``k`` run again);
* :func:`cpu_program` is the whole graph with every call an input: the CPU nodes alone.

A module whose regions sit inside loops and branches (``body_<k>``, fallback/bodies.py)
cannot be cut that way: a region inside a loop runs once per iteration. :func:`run_inlined`
runs a copy of its graph with every body inlined and every region call, at any depth,
replaced by one call of an operator of this module (``torch_nnapi_regions::run``) that hands
the region's tensors to a Python function: each execution of each region is seen (run on
the host runtime, timed, counted) while the loops and branches run as TorchScript.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..capture.script import standalone_function
from .bodies import BODY_PREFIX
from .stitch import REGION_PREFIX

# Runs one region: (its NnapiProgram, the tensors it takes) -> the tensors it returns.
RegionRunner = Callable[[torch.jit.ScriptModule, list[torch.Tensor]], list[torch.Tensor]]


def is_partitioned(module: object) -> bool:
    """Whether ``module`` runs NNAPI regions and CPU nodes (``fallback=True``), the regions
    possibly all inside loops and branches (``body_<k>``)."""
    return (hasattr(module, f"{REGION_PREFIX}0") or hasattr(module, f"{BODY_PREFIX}0")) and \
        isinstance(getattr(module, "partition", None), str)


def region_programs(module: torch.jit.ScriptModule) -> list[torch.jit.ScriptModule]:
    """The NnapiProgram of each region, in the order ``forward`` calls them."""
    return [getattr(module, name) for name in _called_regions(module.graph)]


def _calls(graph: torch._C.Graph) -> list[torch._C.Node]:
    """The top-level ``self.region_<k>.forward(...)`` calls, in order."""
    found = []
    for n in graph.nodes():
        if n.kind() != "prim::CallMethod":
            continue
        target = n.inputsAt(0).node()
        if target.kind() == "prim::GetAttr" and target.s("name").startswith(REGION_PREFIX):
            found.append(n)
    return found


def _called_regions(graph: torch._C.Graph) -> list[str]:
    return [call.inputsAt(0).node().s("name") for call in _calls(graph)]


def _cut(module: torch.jit.ScriptModule, upto: int | None) -> torch._C.Graph:
    """A copy of ``forward``'s graph taking each region call before ``upto`` as an extra
    input and returning region ``upto``'s input list; with ``upto`` None, taking every
    call as an input and returning a tuple: what ``forward`` returns, then each region's
    input list (so the CPU nodes computing them still run)."""
    graph = module.graph.copy()  # forward's
    calls = _calls(graph)
    if upto is None:
        returned = [next(iter(graph.outputs()))] + [call.inputsAt(1) for call in calls]
        graph.eraseOutput(0)
        pack = graph.create("prim::TupleConstruct", returned, 1)
        pack.output().setType(torch._C.TupleType([v.type() for v in returned]))
        pack.insertBefore(graph.return_node())
        graph.registerOutput(pack.output())
    else:
        wanted = calls[upto].inputsAt(1)
        while len(list(graph.outputs())):
            graph.eraseOutput(0)
        graph.registerOutput(wanted)
        _drop_after(graph, calls[upto])
        calls = calls[:upto]
    for call in calls:
        value = graph.addInput()
        value.setType(call.output().type())
        call.output().replaceAllUsesWith(value)
        getter = call.inputsAt(0).node()
        call.destroy()
        if not getter.output().uses():
            getter.destroy()
    torch._C._jit_pass_dce(graph)
    this = list(graph.inputs())[0]
    if this.uses() and has_bodies(module):
        raise ValueError("this partitioned module runs regions inside loops or branches"
                         f" ({BODY_PREFIX}0...): run it with run_inlined")
    if this.uses():
        raise ValueError("this partitioned module's forward reads attributes other than its"
                         " regions; it cannot be taken apart")
    graph.eraseInput(0)
    graph.lint()
    return graph


def _same(a: torch._C.Node, b: torch._C.Node) -> bool:
    return a.kind() == b.kind() and [o.unique() for o in a.outputs()] == \
        [o.unique() for o in b.outputs()]


def _drop_after(graph: torch._C.Graph, call: torch._C.Node) -> None:
    """Removes ``call`` and everything after it (nothing before it reads them)."""
    nodes = list(graph.nodes())
    start = next(i for i, n in enumerate(nodes) if _same(n, call))
    for n in reversed(nodes[start:]):
        n.destroy()


@dataclass
class Trace:
    """One run of a partitioned module taken apart."""

    region_inputs: list[list[torch.Tensor]]  # what each region call got
    region_outputs: list[list[torch.Tensor]]  # and returned
    outputs: Any  # what forward returned


def run_apart(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor],
              run_region: RegionRunner) -> Trace:
    """Runs ``module`` on ``inputs`` with each region call done by ``run_region(program,
    tensors)`` (e.g. on the host runtime); the CPU nodes run as TorchScript."""
    inputs = list(inputs)
    programs = region_programs(module)
    got_in: list[list[torch.Tensor]] = []
    got_out: list[list[torch.Tensor]] = []
    for k, program in enumerate(programs):
        step = standalone_function(f"region_{k}_inputs", _cut(module, k))
        with torch.no_grad():
            tensors = list(step(*inputs, *got_out))
        got_in.append(tensors)
        got_out.append(list(run_region(program, tensors)))
    with torch.no_grad():
        outputs = cpu_program(module)(*inputs, *got_out)[0]
    return Trace(got_in, got_out, outputs)


def cpu_program(module: torch.jit.ScriptModule) -> Callable[..., Any]:
    """``forward`` without its regions: ``f(*inputs, *region_outputs)`` runs every CPU node
    on the given region outputs (one list per region call) and returns what ``forward``
    returns, then the input list of each region."""
    return standalone_function("cpu_nodes", _cut(module, None))


def has_bodies(module: object) -> bool:
    """Whether a partitioned module converted blocks of its loops or branches."""
    return hasattr(module, f"{BODY_PREFIX}0")


# ------------------------------------------------------------------ regions inside bodies

REGION_OPERATOR = "torch_nnapi_regions::run"
_library: torch.library.Library | None = None
_current: list[Callable[[int, list[torch.Tensor]], list[torch.Tensor]]] = []


def _run_region_operator(region: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    if not _current:
        raise RuntimeError(f"{REGION_OPERATOR} called outside run_inlined")
    return _current[-1](region, list(tensors))


def _define_operator() -> None:
    """The operator the inlined graph calls (defined once per process)."""
    global _library
    if _library is None:
        # torch.library is untyped
        library = torch.library.Library(  # type: ignore[no-untyped-call]
            REGION_OPERATOR.split("::")[0], "DEF")
        library.define(  # type: ignore[no-untyped-call]
            "run(int region, Tensor[] inputs) -> Tensor[]")
        library.impl(  # type: ignore[no-untyped-call]
            "run", _run_region_operator, "CompositeExplicitAutograd")
        _library = library


@dataclass(eq=False)
class InlinedRegion:
    """A region of a partitioned module or of one of its bodies, as :func:`run_inlined`
    saw it run: its path (``body_0.region_1``), program, and each execution's inputs."""

    name: str
    program: torch.jit.ScriptModule
    calls: list[list[torch.Tensor]] = field(default_factory=list)


@dataclass
class InlinedProgram:
    """A partitioned module's graph with its bodies inlined and its regions operators."""

    function: Callable[..., Any]
    regions: list[InlinedRegion]


def inlined_program(module: torch.jit.ScriptModule) -> InlinedProgram:
    """``module``'s forward with every body inlined and every region call the operator."""
    _define_operator()
    graph = module.graph.copy()
    regions: list[InlinedRegion] = []
    _inline(module, graph, regions, "")
    this = list(graph.inputs())[0]
    if this.uses():
        raise ValueError("this partitioned module's forward reads attributes other than its"
                         " regions and bodies; it cannot be taken apart")
    graph.eraseInput(0)
    graph.lint()
    return InlinedProgram(standalone_function("inlined", graph), regions)


def _inline(module: torch.jit.ScriptModule, graph: torch._C.Graph,
            regions: list[InlinedRegion], prefix: str) -> None:
    """In ``graph`` (a copy of ``module``'s forward): each region call becomes the operator
    (numbered in ``regions``), each body call the body's graph, itself inlined."""
    this = list(graph.inputs())[0]

    def visit(block: torch._C.Block) -> None:
        for node in list(block.nodes()):
            for inner in node.blocks():
                visit(inner)
            target = node.inputsAt(0).node() if node.inputsSize() else None
            if node.kind() != "prim::CallMethod" or target is None or \
                    target.kind() != "prim::GetAttr" or target.inputsAt(0) != this:
                continue
            name = target.s("name")
            if name.startswith(REGION_PREFIX):
                _call_operator(graph, node, len(regions))
                regions.append(InlinedRegion(prefix + name, getattr(module, name)))
            elif name.startswith(BODY_PREFIX):
                body = getattr(module, name)
                body_graph = body.graph.copy()
                _inline(body, body_graph, regions, f"{prefix}{name}.")
                _inline_call(graph, node, body_graph)
            else:
                continue
            if not target.output().uses():
                target.destroy()

    visit(graph.block())
    torch._C._jit_pass_dce(graph)


def _call_operator(graph: torch._C.Graph, call: torch._C.Node, region: int) -> None:
    number = graph.create("prim::Constant", [], 1)
    number.i_("value", region)
    number.output().setType(torch._C.IntType.get())
    number.insertBefore(call)
    operator = graph.create(REGION_OPERATOR, [number.output(), call.inputsAt(1)], 1)
    operator.output().setType(call.output().type())
    operator.insertBefore(call)
    call.output().replaceAllUsesWith(operator.output())
    call.destroy()


def _inline_call(graph: torch._C.Graph, call: torch._C.Node, body: torch._C.Graph) -> None:
    """Replaces ``call`` (of a body's forward) with the nodes of ``body``, which no longer
    reads its module input."""
    if list(body.inputs())[0].uses():
        raise ValueError("a body of this partitioned module reads attributes other than its"
                         " regions and bodies; it cannot be taken apart")
    values = dict(zip(list(body.inputs())[1:], list(call.inputs())[1:], strict=True))
    for node in body.nodes():
        clone = graph.createClone(  # type: ignore[attr-defined]  # not in torch's stubs
            node, lambda v: values[v])
        clone.insertBefore(call)
        values.update(zip(node.outputs(), clone.outputs(), strict=True))
    call.output().replaceAllUsesWith(values[next(iter(body.outputs()))])
    call.destroy()


@contextlib.contextmanager
def _running(runner: Callable[[int, list[torch.Tensor]], list[torch.Tensor]]) -> Iterator[None]:
    _current.append(runner)
    try:
        yield
    finally:
        _current.pop()


def run_inlined(program: InlinedProgram, inputs: Sequence[Any],
                run_region: Callable[[InlinedRegion, list[torch.Tensor]], list[torch.Tensor]]
                ) -> Any:
    """Runs an :func:`inlined_program` on ``inputs`` with each execution of each region done
    by ``run_region(region, tensors)``; returns what the module's forward returns."""

    def runner(index: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        region = program.regions[index]
        region.calls.append(tensors)
        return list(run_region(region, tensors))

    with _running(runner), torch.no_grad():
        return program.function(*inputs)


__all__ = ["REGION_OPERATOR", "InlinedProgram", "InlinedRegion", "Trace", "cpu_program",
           "has_bodies", "inlined_program", "is_partitioned", "region_programs", "run_apart",
           "run_inlined"]
