"""Loops and branches the CPU runs, with what NNAPI can run inside their bodies on NNAPI.

A ``prim::Loop`` or ``prim::If`` on computed values stays in TorchScript (the trip count,
the loop-carried values, lists being built, ``break``, the condition), but each of its
blocks is a graph of its own: :func:`body_graph` lifts it out as a function of its block
inputs and the values it reads from outside (the constants it reads, weights included,
copied in), the fallback partitions and converts that function like a model (the policy's
knobs apply, and its own loops and branches nest the same way), and :func:`call_body` then
replaces the block's nodes with one call of the converted body, a submodule of the
partitioned module (``body_0``, ``body_1``...). Its NNAPI regions are compiled once, when
the module loads, and run at each iteration; lists and tensors the body changes in place
are shared with the caller, as TorchScript passes them by reference.

The body's example inputs are what its block reads the first time it runs on the model's
example inputs (:func:`body_examples`), or, for a block they do not reach (the ``else`` they
do not take), on other data of their sizes and kinds (``regions/trial.py``: float tensors
random with their mean and spread, integer ones shuffled); a block none of these reach stays
as it is, and so does a block that reads tensors of other sizes on other data than on the
examples (the boxes of a detector's image): its regions would keep the examples' sizes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..capture.graph import Node
from ..capture.script import Captured, probing, standalone_function
from ..regions.partition import Partition
from ..regions.trial import other_data

CONTROL_FLOW = ("prim::Loop", "prim::If")
BODY_PREFIX = "body_"
OTHER_RUNS = 4  # runs on other data looking for the blocks the example inputs do not reach
SIZE_RUNS = 2  # runs on other data at least, looking for blocks whose inputs change sizes


def body_name(index: int) -> str:
    return f"{BODY_PREFIX}{index}"


@dataclass
class Body:
    """A block of a CPU loop or branch, converted: its module and what it holds."""

    node: Node  # the loop or branch (a top-level node of the captured graph)
    block: int  # which of its blocks (a loop has one; a branch, then and else)
    module: torch.jit.ScriptModule  # a partitioned module: its regions and CPU nodes
    report: Any  # that module's PartitionReport (JSON-able: ``to_json()``)

    @property
    def kind(self) -> str:
        return self.node.kind


# The fallback's conversion of a body: (its captured graph, its example inputs) -> the
# module and its report, or None when no part of the body runs on NNAPI.
ConvertBody = Callable[[Captured, tuple[Any, ...]], tuple[torch.jit.ScriptModule, Any] | None]


def convert_bodies(captured: Captured, part: Partition, convert_body: ConvertBody,
                   capture_body: Callable[[torch._C.Graph, tuple[Any, ...]], Captured]
                   ) -> list[Body]:
    """Converts the blocks of the loops and branches ``part`` leaves on the CPU (see the
    module docstring), in program order."""
    this = next(iter(captured.script.inputs()))
    targets: list[tuple[Node, int, torch._C.Block]] = []
    for c in part.cpu:
        if c.node.kind not in CONTROL_FLOW:
            continue
        for b, block in enumerate(captured.nodes[c.node].blocks()):
            reads = block_reads(block)[0]
            # a block reading the module itself (an attribute freezing left) stays as it is
            if c.node.blocks[b].nodes and all(v.unique() != this.unique() for v in reads):
                targets.append((c.node, b, block))
    if not targets:
        return []
    blocks = [t[2] for t in targets]
    examples = body_examples(captured.script, blocks, captured.examples)
    varying: set[int] = set()
    for seed in range(OTHER_RUNS):  # other data of their kind: blocks the examples miss,
        if seed >= SIZE_RUNS and all(e is not None for e in examples):  # and sizes that vary
            break
        other = tuple(other_data(x, seed=seed * len(captured.examples) + i)
                      for i, x in enumerate(captured.examples))
        found = body_examples(captured.script, blocks, other)
        for k, (e, f) in enumerate(zip(examples, found, strict=True)):
            if e is None:
                examples[k] = f
            elif f is not None and any(_sizes_change([a, b]) for a, b in zip(e, f, strict=True)):
                varying.add(k)  # a detector's boxes: as many as the image has
    bodies = []
    examples = [None if k in varying else e for k, e in enumerate(examples)]
    for (node, b, block), example in zip(targets, examples, strict=True):
        if example is None:
            continue  # not reached on the example inputs: no shapes to convert it with
        converted = convert_body(capture_body(body_graph(block, this.type()), example),
                                 example)
        if converted is not None:
            bodies.append(Body(node, b, *converted))
    return bodies


# ------------------------------------------------------------------------------ lifting


def block_params(block: torch._C.Block) -> list[torch._C.Value]:
    """The block inputs a body takes: those the block reads. A loop's trip counter stays
    out when unread: TorchScript prints a loop whose counter is read as a ``for`` loop, and
    a ``for`` loop cannot also stop on a condition (``break``)."""
    return [v for v in block.inputs() if v.uses()]


def computed_outputs(block: torch._C.Block) -> list[int]:
    """Which of the block's outputs its nodes compute; the others (constants, values from
    outside, its own inputs passed on) stay where they are, so that a loop that always
    continues still says so: TorchScript prints it as a ``for`` loop only then."""
    made = {v.unique() for n in block.nodes() for v in n.outputs()}
    return [i for i, v in enumerate(block.outputs()) if v.unique() in made]


def block_reads(block: torch._C.Block) -> tuple[list[torch._C.Value], list[torch._C.Value]]:
    """What ``block`` (its nested blocks included) reads from outside it, in order of first
    use: (the values a call must pass, the constants a copy of the block copies in)."""
    defined: set[int] = set()
    reads: dict[int, torch._C.Value] = {}

    def read(v: torch._C.Value) -> None:
        if v.unique() not in defined:
            reads.setdefault(v.unique(), v)

    def visit(b: torch._C.Block) -> None:
        defined.update(v.unique() for v in b.inputs())
        for n in b.nodes():
            for v in n.inputs():
                read(v)
            for inner in n.blocks():
                visit(inner)
            defined.update(v.unique() for v in n.outputs())
        for v in b.outputs():
            read(v)

    visit(block)
    values = [v for v in reads.values() if v.node().kind() != "prim::Constant"]
    constants = [v for v in reads.values() if v.node().kind() == "prim::Constant"]
    return values, constants


def body_graph(block: torch._C.Block, this_type: torch._C.JitType) -> torch._C.Graph:
    """``block`` as a graph: (self, block inputs..., values read from outside...) -> a tuple
    of the block's outputs its nodes compute."""
    graph = torch._C.Graph()
    this = graph.addInput("self")
    this.setType(this_type)
    reads, constants = block_reads(block)
    env: dict[int, torch._C.Value] = {}
    for v in [*block_params(block), *reads]:
        new = graph.addInput()
        new.setType(v.type())
        env[v.unique()] = new
    end = graph.return_node()
    for v in constants:
        # createClone is not in torch's stubs
        clone = graph.createClone(v.node(), lambda x: x)  # type: ignore[attr-defined]
        clone.insertBefore(end)
        env[v.unique()] = clone.output()
    for n in block.nodes():
        clone = graph.createClone(n, lambda x: env[x.unique()])  # type: ignore[attr-defined]
        clone.insertBefore(end)
        env.update((a.unique(), b) for a, b in zip(n.outputs(), clone.outputs(), strict=True))
    returned = list(block.outputs())
    outputs = [env[returned[i].unique()] for i in computed_outputs(block)]
    tup = graph.create("prim::TupleConstruct", outputs, 1)
    tup.output().setType(torch._C.TupleType([v.type() for v in outputs]))
    tup.insertBefore(end)
    graph.registerOutput(tup.output())
    graph.lint()
    return graph


def call_body(graph: torch._C.Graph, block: torch._C.Block, this: torch._C.Value,
              name: str, body: torch.jit.ScriptModule) -> None:
    """Replaces the nodes of ``block`` (in ``graph``, whose first input ``this`` is the
    module holding ``body`` as ``name``) with one call of ``body``."""
    reads, _ = block_reads(block)
    end = block.returnNode()
    get = graph.create("prim::GetAttr", [this], 1)
    get.s_("name", name)
    get.output().setType(body._c._type())
    call = graph.create("prim::CallMethod", [get.output(), *block_params(block), *reads],
                        1)
    call.s_("name", "forward")
    call.output().setType(body._c._get_method("forward").schema.returns[0].type)
    computed = computed_outputs(block)
    unpack = graph.create("prim::TupleUnpack", [call.output()], len(computed))
    old = list(block.nodes())
    for node in (get, call, unpack):
        node.insertBefore(end)
    outputs = list(block.outputs())
    for i, new in zip(computed, unpack.outputs(), strict=True):
        new.setType(outputs[i].type())
        outputs[i] = new
    end.removeAllInputs()  # type: ignore[call-arg]  # torch's stub gives it an argument
    for out in outputs:
        block.registerOutput(out)
    for node in reversed(old):
        node.destroy()


# ------------------------------------------------------------------------------ examples


def body_examples(script: torch._C.Graph, blocks: list[torch._C.Block],
                  inputs: tuple[Any, ...]) -> list[tuple[Any, ...] | None]:
    """What each of ``blocks`` (blocks of top-level nodes of ``script``) receives the first
    time it runs (its block inputs, then :func:`block_reads`) when ``script`` runs on
    ``inputs``; None for a block that does not run, or that reads a tensor whose sizes
    change from one run of the block to the next."""
    graph = script.copy()
    copies = dict(zip(script.nodes(), graph.nodes(), strict=True))
    start = next(iter(graph.nodes()), graph.return_node())
    records: list[list[torch._C.Value]] = []
    for block in blocks:
        target = list(copies[block.owningNode()].blocks())[
            list(block.owningNode().blocks()).index(block)]
        first = next(iter(target.nodes()), target.returnNode())
        recorded = []
        for v in [*block_params(target), *block_reads(target)[0]]:
            kind = v.type()
            if isinstance(kind, torch._C.TensorType):
                kind = torch._C.TensorType.get()
            made = graph.create("prim::ListConstruct", [], 1)
            made.output().setType(torch._C.ListType(kind))
            made.insertBefore(start)
            item = v
            if isinstance(kind, torch._C.TensorType):  # as it was, before any change
                none = graph.create("prim::Constant", [], 1)
                none.output().setType(torch._C.NoneType.get())
                clone = graph.create("aten::clone", [v, none.output()], 1)
                clone.output().setType(kind)
                none.insertBefore(first)
                clone.insertBefore(first)
                item = clone.output()
            append = graph.create("aten::append", [made.output(), item], 1)
            append.output().setType(made.output().type())
            append.insertBefore(first)
            recorded.append(made.output())
        records.append(recorded)
    probing(graph, [v for recorded in records for v in recorded])
    try:
        run = standalone_function("torch_nnapi_body_probe", graph)
        with torch.no_grad(), torch.jit.optimized_execution(False):
            results = list(run(*[copy.deepcopy(x) for x in inputs]))
    except Exception:  # noqa: BLE001 - the model fails on its examples: no block is reached
        return [None] * len(blocks)
    found: list[tuple[Any, ...] | None] = []
    for recorded in records:
        lists, results = results[:len(recorded)], results[len(recorded):]
        steady = all(lists) and not any(_sizes_change(x) for x in lists)
        found.append(tuple(x[0] for x in lists) if steady else None)
    return found


def _sizes_change(runs: list[Any]) -> bool:
    """Whether a tensor a block reads changes sizes or dtype from one run of the block to
    the next (a tensor a loop grows): its regions could not keep the sizes of the first."""
    kinds = {(tuple(x.shape), x.dtype) for x in runs if isinstance(x, torch.Tensor)}
    return len(kinds) > 1


__all__ = ["BODY_PREFIX", "CONTROL_FLOW", "Body", "block_params", "block_reads", "body_examples",
           "body_graph", "body_name", "call_body", "computed_outputs", "convert_bodies"]
