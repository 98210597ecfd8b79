"""The graph the lowerings walk, whichever front-end captured it.

Both front-ends (``script.py``: TorchScript tracing; ``export.py``: torch.export) produce
plain Python objects: a :class:`Graph` of :class:`Node` s over :class:`Value` s, each value
carrying its example (shape, dtype and quantization on the example inputs), so lowerings,
the CPU fallback and the tools never see which front-end ran. The vocabulary the graph
shares with its readers lives here too: TorchScript's dtype codes, and the node kinds the
converter's own graph passes create.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..outputs import OutputStructure

NO_CONSTANT = object()



@dataclass(frozen=True)
class ExampleTensor:
    """A tensor's properties when the model runs on the example inputs."""

    shape: tuple[int, ...]
    dtype: str
    scale: float = 0.0
    zero_point: int = 0


@dataclass(eq=False)
class Value:
    name: str
    type: str  # TorchScript type as printed: "Tensor", "int", "int[]", "(Tensor, int)"
    kind: str  # TorchScript type kind: "TensorType", "IntType", "ListType", ...
    constant: Any = NO_CONSTANT
    example: Any = None  # ExampleTensor for tensors, the value for numbers
    tensor: Any = None  # the example tensor itself, kept only for layer-wise comparison
    # the same tensor computed by another of PyTorch's quantized engines (see capture)
    alternate: Any = None

    @property
    def is_constant(self) -> bool:
        return self.constant is not NO_CONSTANT

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=False)
class Block:
    nodes: list[Node]
    outputs: list[Value]


@dataclass(eq=False)
class Node:
    kind: str
    inputs: list[Value]
    outputs: list[Value]
    location: str = "<unknown>"
    schema: str = ""
    blocks: list[Block] = field(default_factory=list)
    steps: list[Node] = field(default_factory=list)  # the nodes a fused node stands for

    def __repr__(self) -> str:
        outs = ", ".join(map(repr, self.outputs))
        ins = ", ".join(map(repr, self.inputs))
        return f"{outs} = {self.kind}({ins})"


@dataclass(eq=False)
class Graph:
    inputs: list[Value]
    nodes: list[Node]
    output: Value  # what forward returns: a tensor, or a tuple/list built by a node
    # how the model nests the tensors ``output`` holds (a front-end returns them flat: one
    # tensor, or a tuple); None: as ``output`` is (a part of a graph)
    structure: OutputStructure | None = None

    def walk(self) -> Iterator[Node]:
        """Every node, including those nested in blocks, in program order."""
        return walk(self.nodes)


def walk(nodes: Iterable[Node]) -> Iterator[Node]:
    """Nodes and, after each, the nodes of its blocks, in program order."""
    for n in nodes:
        yield n
        for b in n.blocks:
            yield from walk(b.nodes)


def free_values(node: Node) -> list[Value]:
    """The values a top-level node reads, its blocks' reads from outside included."""
    defined: set[Value] = set()
    reads: list[Value] = []
    for n in walk([node]):
        if n is not node:
            defined.update(n.outputs)
        reads.extend(n.inputs)
        for b in n.blocks:
            reads.extend(b.outputs)
    return [v for v in dict.fromkeys(reads) if v not in defined]


# ScalarType codes of TorchScript's dtype values.
SCALAR_TYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                "float32": 6, "float64": 7, "bool": 11, "qint8": 12, "quint8": 13,
                "qint32": 14}
DTYPE_OF_CODE = {code: name for name, code in SCALAR_TYPES.items()}

# Node kinds the converter's graph passes create (pipeline/patterns.py), lowered as a whole:
# a reshape -> permute -> reshape chain (ShuffleNet's channel shuffle, window partitions) ...
FUSED_KIND = "torch_nnapi::reshape_permute_reshape"
# ... and a factory then filled region by region through slices (Swin's attention mask):
# ``m = x.new_zeros((H, W)); m[a:b, c:d] = k; ...`` (lowerings/factory.py)
FILLED_KIND = "torch_nnapi::filled_regions"
