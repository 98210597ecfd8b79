"""Each reader of a size gets its own copy of the size's nodes, so NNAPI regions never share
one.

Walking back from its results, every region that reads ``x.shape[1]`` (the length a causal
mask is built from, say) takes in the ``sym_size`` node and the arithmetic on it; ExecuTorch
passes no symbolic size between delegates, and a partitioner may not change the graph it
tags. So before partitioning (``to_edge_transform_and_lower(transform_passes=...)``; ``to_pte``
does it) :func:`copy_sizes_per_reader` gives each node that reads a size (other than a size
itself) its own chain of size nodes: each delegate then reads the size from the tensor itself,
which becomes its input. The copies cost one integer read each on the CPU.
"""

from __future__ import annotations

import torch
from torch.fx.passes.infra.pass_base import PassResult

SIZE_VALUES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)


def is_size(node: torch.fx.Node) -> bool:
    """Whether ``node`` computes a size (``aten.sym_size.int``, or arithmetic on sizes):
    a symbolic or plain number, not a tensor."""
    return node.op == "call_function" and isinstance(node.meta.get("val"), SIZE_VALUES)


def _copy_chain(graph: torch.fx.Graph, reader: torch.fx.Node) -> int:
    """Gives ``reader`` fresh copies of the size nodes it reads (and of the sizes those
    read), each inserted after its original; returns how many."""
    copies: dict[torch.fx.Node, torch.fx.Node] = {}

    def copy_of(size: torch.fx.Node) -> torch.fx.Node:
        if size not in copies:
            for read in size.all_input_nodes:
                if is_size(read):
                    copy_of(read)
            with graph.inserting_after(size):
                copies[size] = graph.node_copy(size, lambda n: copies.get(n, n))
        return copies[size]

    for read in reader.all_input_nodes:
        if _shared_size(read):
            reader.replace_input_with(read, copy_of(read))
    return len(copies)


def _shared_size(node: torch.fx.Node) -> bool:
    return is_size(node) and len(node.users) > 1


def copy_sizes_per_reader(graph_module: torch.fx.GraphModule) -> PassResult:
    """The pass (see the module docstring), on ``graph_module`` and its submodules (the
    branches of a ``torch.cond``): every reader of a size shared with another reader but
    the first gets its own copy."""
    copied = 0
    for module in graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        here = sum(_copy_chain(module.graph, node) for node in list(module.graph.nodes)
                   if node.op != "output" and not is_size(node)
                   and any(map(_shared_size, node.all_input_nodes)))
        if here:  # only the graphs that changed are recompiled
            module.recompile()
        copied += here
    return PassResult(graph_module, copied > 0)


__all__ = ["copy_sizes_per_reader", "is_size"]
