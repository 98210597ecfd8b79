"""The front-ends that capture a PyTorch model as the graph the lowerings walk.

``"trace"`` (``script.py``): torch.jit.trace and freeze, what PyTorch Mobile's existing apps
run. ``"export"`` (``export.py``): torch.export, what PyTorch recommends today, and
the form PT2E quantization produces. An ``ExportedProgram`` (or the GraphModule of one) is
always captured through export; an ``nn.Module`` through tracing unless asked otherwise (or
unless it calls PT2E's quantize ops: a quantized model written as Python goes through export).
Both give the same :class:`Graph`, whose PT2E quantize/dequantize patterns are then folded
into quantized operations (``qdq.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from ...nnapi.errors import counted
from ..errors import CaptureError, first_line
from ..options import Flexible
from . import qdq
from .export import Exported, capture_exported, export_module, flexible_dims, is_exported
from .export_flow import scriptable
from .graph import Graph
from .script import Captured, as_example_tuple, capture_script, trace

CAPTURES = ("trace", "export")


@dataclass
class CapturedModel:
    graph: Graph
    examples: tuple[torch.Tensor, ...]
    flexible: list[tuple[int, ...]]  # per input, the dimensions resolved at load time
    front_end: str  # "trace" or "export"
    script: Captured | None = None  # the TorchScript capture (trace), which the CPU
    # fallback partitions
    program: Exported | None = None  # what the export front-end captured from


def example_inputs_of(model: object, example_inputs: object) -> tuple[torch.Tensor, ...]:
    """The example inputs as a tuple; an ExportedProgram's own when none are given."""
    if example_inputs is None and isinstance(model, torch.export.ExportedProgram) \
            and model.example_inputs is not None:
        args, kwargs = model.example_inputs
        if kwargs:
            raise TypeError("the exported program takes keyword inputs; converted models"
                            " take positional tensors")
        return tuple(args)
    if example_inputs is None:
        raise TypeError("example_inputs are needed to convert this model")
    return as_example_tuple(example_inputs)


def front_end_of(model: object, capture_mode: str | None) -> str:
    """"export" or "trace": ``capture_mode`` checked against the model, or the default."""
    exported = is_exported(model)
    if capture_mode is None:
        return "export" if exported else "trace"
    if capture_mode not in CAPTURES:
        raise ValueError(f"capture must be one of {', '.join(CAPTURES)}, got {capture_mode!r}")
    if capture_mode == "trace" and isinstance(model, torch.export.ExportedProgram):
        raise CaptureError("an ExportedProgram is captured with capture='export'")
    if capture_mode == "export" and isinstance(model, torch.jit.ScriptModule):
        raise CaptureError("a TorchScript module cannot be exported: use capture='trace'")
    return capture_mode


def _pt2e_quantized(graph: Graph, model: object) -> bool:
    """Whether a traced module calls PT2E's quantize ops (a quantized model written as Python,
    e.g. by codegen): it is captured through export, as PT2E's own output is, because
    freezing a trace computes the weights' dequantization and loses their 8-bit integers."""
    return not isinstance(model, torch.jit.ScriptModule) and any(
        node.kind in qdq.PT2E_OPS for node in graph.nodes)


def flexible_per_input(examples: tuple[torch.Tensor, ...], flexible: Flexible
                       ) -> list[tuple[int, ...]]:
    """``flexible`` as one tuple of non-negative dimensions per input, checked."""
    n = len(examples)
    flex: list[tuple[int, ...]]
    if flexible is None:
        flex = [()] * n
    elif isinstance(flexible, Mapping):
        for k in flexible:
            if not 0 <= int(k) < n:
                raise ValueError(f"flexible names input {k}, but the model has {n} inputs")
        flex = [tuple(flexible.get(i, ())) for i in range(n)]
    else:
        flex = [tuple(f or ()) for f in flexible]
        if len(flex) != n:
            raise ValueError(f"flexible has {len(flex)} entries for {n} inputs")
    result = []
    for i, (x, dims) in enumerate(zip(examples, flex, strict=False)):
        for d in dims:
            if not -x.dim() <= d < x.dim():
                raise ValueError(f"flexible dimension {d} of input {i} is out of range for"
                                 f" its shape {list(x.shape)}")
        result.append(tuple(sorted({d % x.dim() for d in dims})))
    return result


def capture_model(model: object, example_inputs: object, *, capture_mode: str | None = None,
                  flexible: Flexible = None, keep_values: bool = False,
                  alternate: str | None = None) -> CapturedModel:
    """Captures ``model`` with the chosen front-end, probed on the example inputs; with
    ``keep_values`` every value keeps its example tensor (layer-by-layer comparison), and
    with ``alternate`` (a quantized engine; TorchScript capture) that engine's too."""
    examples = example_inputs_of(model, example_inputs)
    for i, x in enumerate(examples):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"example input {i} must be a tensor, got {type(x).__name__}")
    flex = flexible_per_input(examples, flexible)
    if isinstance(model, Captured):  # traced once by capture_script, converted several ways
        if capture_mode not in (None, "trace") or keep_values or alternate is not None:
            raise CaptureError("a model captured by capture_script converts as traced,"
                               " without kept values or another engine")
        qdq.fold(model.graph)
        return CapturedModel(model.graph, examples, flex, "trace", model)
    mode = front_end_of(model, capture_mode)
    script = None
    if mode == "trace":
        script = capture_script(model, examples, keep_values, alternate=alternate)
        graph = script.graph
        if capture_mode is None and alternate is None and _pt2e_quantized(graph, model):
            mode, script = "export", None
    if mode == "export":
        program = model if is_exported(model) else export_module(model, examples, flex)
        flex = _merged(flex, flexible_dims(program))
        graph = capture_exported(program, examples, keep_values)
    qdq.fold(graph)
    return CapturedModel(graph, examples, flex, mode, script,
                         None if mode == "trace" else program)


def script_capture(front: CapturedModel) -> Captured:
    """The TorchScript capture the CPU fallback partitions (its CPU nodes run as
    TorchScript): the trace itself, or for the export front-end a trace of the exported
    graph, whose ATen calls become the TorchScript nodes (what export captured, not the
    Python source again)."""
    if front.script is not None:
        return front.script
    program = front.program
    assert program is not None, "a capture without TorchScript comes from export"
    module = program.module() if isinstance(program, torch.export.ExportedProgram) \
        else program
    # tracing alone would keep only the branch (and the trip count) the example takes
    module = scriptable(module, front.examples)
    try:
        # traced as is: an exported module refuses .eval() and has no training mode
        traced, structure = trace(module, front.examples)
    except Exception as e:  # noqa: BLE001 - tracing fails in many ways; say which
        raise CaptureError("the CPU fallback runs the model as TorchScript, and tracing the"
                           f" exported program failed: {type(e).__name__}: {first_line(e)}")\
            from None
    script = capture_script(traced, front.examples, structure=structure)
    qdq.fold(script.graph)
    return script


def _merged(requested: list[tuple[int, ...]], symbolic: list[tuple[int, ...]]
            ) -> list[tuple[int, ...]]:
    """The exported program's symbolic dimensions are flexible; asking for a dimension
    flexible that the program fixed is an error."""
    if len(symbolic) != len(requested):
        raise TypeError(f"the exported model takes {counted(len(symbolic), 'input')}, but"
                        f" {counted(len(requested), 'example input')} given")
    for i, (want, have) in enumerate(zip(requested, symbolic, strict=True)):
        fixed = sorted(set(want) - set(have))
        if fixed:
            raise CaptureError(f"input {i} dimension {fixed[0]} cannot be flexible: the"
                               " exported program has a fixed size there (export it with a"
                               " torch.export.Dim for that dimension)")
    return [tuple(sorted(set(w) | set(h))) for w, h in zip(requested, symbolic, strict=True)]
