"""copy_sizes_per_reader: each reader of a shared size gets its own chain of size nodes,
and the program computes what it did."""

from __future__ import annotations

import torch
from torch.export import Dim, export

from torch_nnapi.convert.executorch.size_copies import copy_sizes_per_reader, is_size


class TwoReaders(torch.nn.Module):
    """Two tensors built from one size (and arithmetic on it), as a causal mask is."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        ones = torch.ones(n * 2, dtype=x.dtype)
        steps = torch.arange(n * 2, dtype=x.dtype)
        return x.sum(-1).repeat(1, 2) + ones + steps


def _exported() -> torch.export.ExportedProgram:
    return export(TwoReaders(), (torch.randn(2, 5, 3),),
                  dynamic_shapes=({1: Dim("n", max=16)},))


def test_each_reader_gets_its_own_sizes() -> None:
    program = _exported()
    graph_module = program.graph_module
    shared = [n for n in graph_module.graph.nodes if is_size(n) and len(n.users) > 1]
    assert shared, "the case shares a size"
    result = copy_sizes_per_reader(graph_module)
    assert result.modified
    for node in graph_module.graph.nodes:
        if is_size(node):
            assert len(node.users) == 1, node.name
    graph_module.graph.lint()
    x = torch.randn(2, 7, 3)
    torch.testing.assert_close(program.module()(x), TwoReaders()(x))
    assert not copy_sizes_per_reader(graph_module).modified  # nothing left to copy


def test_a_graph_without_shared_sizes_is_left_alone() -> None:
    program = export(torch.nn.Linear(3, 2), (torch.randn(4, 3),))
    before = str(program.graph_module.graph)
    assert not copy_sizes_per_reader(program.graph_module).modified
    assert str(program.graph_module.graph) == before
