"""A partitioned module taken apart again: its regions, their inputs, its CPU nodes alone.

Tools need what PyTorch's NNAPI runtime hides inside a partitioned module's ``forward``:
``run --host`` runs each region on the host runtime instead, and ``bench`` times regions
and CPU nodes separately. Both come from the module's own ``forward`` graph (as saved, so
any converted file works): each ``self.region_<k>.forward(...)`` call is found, and copies
of the graph are made into functions where region calls become inputs:

* :func:`region_inputs` is the graph up to call ``k``, returning what region ``k`` takes,
  given the outputs of the calls before it (the CPU nodes before ``k`` run again);
* :func:`cpu_program` is the whole graph with every call an input: the CPU nodes alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    if this.uses() and hasattr(module, f"{BODY_PREFIX}0"):
        raise ValueError("this partitioned module runs regions inside loops or branches"
                         f" ({BODY_PREFIX}0...), which cannot be taken apart to run on the"
                         " host runtime or be timed alone: run it through PyTorch's NNAPI"
                         " runtime")
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


__all__ = ["Trace", "cpu_program", "is_partitioned", "region_programs", "run_apart"]
