"""Graph patterns lowered as a whole.

ShuffleNet's channel shuffle, ``x.view(n, g, c // g, h, w).transpose(1, 2).contiguous()
.view(n, c, h, w)``, passes through a 5-D tensor (which the converter holds in an operand
merging dimensions, layout.py), yet is exactly one CHANNEL_SHUFFLE. :func:`fuse` replaces
such chains (each intermediate read only by the next step) by one node whose lowering
checks the sizes and emits CHANNEL_SHUFFLE, or lowers the original steps one by one when
they are something else (Swin's and MaxViT's window partitions); a chain of constants is
folded step by step. A factory then filled region by region through slices is one node too,
so that the fills need no view semantics (lowerings/factory.py).
"""

from __future__ import annotations

from collections import Counter

from ..capture.graph import FILLED_KIND, FUSED_KIND, Graph, Node, Value

RESHAPES = ("aten::view", "aten::reshape")
PERMUTES = ("aten::transpose", "aten::permute")
FACTORIES = ("aten::zeros", "aten::ones", "aten::full", "aten::new_zeros", "aten::new_ones",
             "aten::new_full")


def _uses(graph: Graph) -> Counter[Value]:
    uses: Counter[Value] = Counter()
    for node in graph.walk():
        for v in node.inputs:
            uses[v] += 1
        for b in node.blocks:
            for v in b.outputs:
                uses[v] += 1
    uses[graph.output] += 1
    return uses


def fuse(graph: Graph) -> None:
    """Rewrites reshape -> permute -> [contiguous ->] reshape chains, and factories filled
    region by region through slices, in place."""
    _fuse_reshape_chains(graph)
    _fuse_region_fills(graph)


def _fuse_region_fills(graph: Graph) -> None:
    """``m = new_zeros(size); slice(m, ...)[...].fill_(k); ...`` -> one FILLED_KIND node
    whose steps are the factory, then each fill's slices and the fill (inputs: the
    factory's, then each step's after the first). Fused only when every read of ``m``
    before the last fill is such a chain, so the fills are all the model does to it."""
    uses = _uses(graph)
    readers: dict[Value, list[Node]] = {}
    for node in graph.nodes:
        for v in node.inputs:
            readers.setdefault(v, []).append(node)
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    replaced: dict[int, Node] = {}
    removed: set[int] = set()
    for factory in graph.nodes:
        if factory.kind not in FACTORIES or id(factory) in removed:
            continue
        base = factory.outputs[0]
        if uses[base] != len(readers.get(base, [])):  # read in a block, or returned
            continue
        chains = [chain for reader in readers.get(base, [])
                  if (chain := _fill_chain(reader, base, readers, uses)) is not None]
        if not chains:
            continue
        last = max((chain[-1] for chain in chains), key=lambda n: position[id(n)])
        others = [n for n in readers.get(base, []) if not any(n is c[0] for c in chains)]
        if any(position[id(n)] < position[id(last)] for n in others):
            continue
        steps = [factory] + [step for chain in chains for step in chain]
        inputs = list(factory.inputs)
        for step in steps[1:]:
            inputs.extend(step.inputs[1:])
        replaced[id(last)] = Node(FILLED_KIND, inputs, [base], factory.location, steps=steps)
        removed.update(id(n) for n in steps if n is not last)
    graph.nodes[:] = [replaced.get(id(n), n) for n in graph.nodes if id(n) not in removed]


def _fill_chain(reader: Node, base: Value, readers: dict[Value, list[Node]], uses: Counter[Value]
                ) -> list[Node] | None:
    """slice -> ... -> slice -> fill_ from ``base``, each step read only by the next and
    the fill's result unread; None when ``reader`` starts something else."""
    chain, node, value = [], reader, base
    while node.kind == "aten::slice" and node.inputs[0] is value \
            and uses[node.outputs[0]] == 1:
        chain.append(node)
        value = node.outputs[0]
        following = readers.get(value, [])
        if len(following) != 1:
            return None
        node = following[0]
    if not chain or node.kind != "aten::fill_" or node.inputs[0] is not value \
            or uses[node.outputs[0]] != 0:
        return None
    return [*chain, node]


def _fuse_reshape_chains(graph: Graph) -> None:
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
