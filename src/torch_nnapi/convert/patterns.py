"""Graph patterns lowered as a whole.

ShuffleNet's channel shuffle, ``x.view(n, g, c // g, h, w).transpose(1, 2).contiguous()
.view(n, c, h, w)``, passes through a 5-D tensor (which the converter holds in an operand
merging dimensions, layout.py), yet is exactly one CHANNEL_SHUFFLE. :func:`fuse` replaces
such chains (each intermediate read only by the next step) by one node whose lowering
checks the sizes and emits CHANNEL_SHUFFLE, or lowers the original steps one by one when
they are something else (Swin's and MaxViT's window partitions); a chain of constants is
folded step by step.
"""

from __future__ import annotations

from collections import Counter

from .capture import Graph, Node, Value

RESHAPES = ("aten::view", "aten::reshape")
PERMUTES = ("aten::transpose", "aten::permute")
FUSED_KIND = "torch_nnapi::reshape_permute_reshape"


def _uses(graph: Graph) -> Counter:
    uses: Counter = Counter()
    for node in graph.walk():
        for v in node.inputs:
            uses[v] += 1
        for b in node.blocks:
            for v in b.outputs:
                uses[v] += 1
    uses[graph.output] += 1
    return uses


def fuse(graph: Graph) -> None:
    """Rewrites reshape -> permute -> [contiguous ->] reshape chains in place."""
    uses = _uses(graph)
    readers: dict[Value, Node] = {}
    for reader in graph.nodes:
        for v in reader.inputs:
            readers.setdefault(v, reader)
    removed: set[int] = set()
    for first in graph.nodes:
        if first.kind not in RESHAPES or uses[first.outputs[0]] != 1:
            continue
        chain = [first]
        node = readers.get(first.outputs[0])
        if node is None or node.kind not in PERMUTES or uses[node.outputs[0]] != 1:
            continue
        chain.append(node)
        node = readers.get(node.outputs[0])
        if node is not None and node.kind == "aten::contiguous" and uses[node.outputs[0]] == 1:
            chain.append(node)
            node = readers.get(node.outputs[0])
        if node is None or node.kind not in RESHAPES or node.inputs[0] is not chain[-1].outputs[0]:
            continue
        chain.append(node)
        last = chain[-1]
        inputs = [first.inputs[0]]
        for step in chain:
            inputs.extend(step.inputs[1:])
        fused = Node(FUSED_KIND, inputs, list(last.outputs), last.location, steps=chain)
        removed.update(id(n) for n in chain[:-1])
        graph.nodes[graph.nodes.index(last)] = fused
    graph.nodes[:] = [n for n in graph.nodes if id(n) not in removed]
