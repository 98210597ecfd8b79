"""An (edge-dialect) ExportedProgram -> the NNAPI delegate blob, through the project's pipeline.

The same capture (``capture/export.py``, which reads edge ops as the ATen ops they stand
for), the same ``lower_graph`` and the same lowerings as every other back-end; what is
ExecuTorch's own is the boundary: the lowerer may take and return float16 and signed 8-bit
tensors (ExecuTorch passes any dtype), and the blob records how each ExecuTorch tensor maps
to its NNAPI operand (``blob_tensor``). A program exported with bounded dynamic dimensions
(``torch.export.Dim(..., max=N)``) lowers with those dimensions flexible; the blob carries
the model at the example sizes, the bounds and the size programs that fix it for others
(``blob_shapes.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from ..builder.symbolic import Sym, hints, program
from ..builder.values import RUNTIME_DTYPES, dtype_name
from ..capture.export import flexible_dims
from ..capture.frontend import capture_model
from ..capture.graph import Graph
from ..errors import ConversionError, UnsupportedUse
from ..pipeline.layout_choice import lower_graph, require_level
from ..pipeline.lowerer import InputSpec, Lowered, Lowerer
from .blob import Blob, BlobModel, BlobTensor, ScalarType, ValueKind
from .blob_shapes import DimBound, PatchTarget, ShapePrograms, SizePatch
from .encode import SCALAR_TYPE_OF_DTYPE, blob_models, blob_tensor
from .specs import EtOptions

# What ExecuTorch passes into and out of a delegate: every dtype an NNAPI operand holds.
BOUNDARY_DTYPES = (*RUNTIME_DTYPES, "float16", "qint8")


class ExecuTorchLowerer(Lowerer):
    """The lowerer with ExecuTorch's boundary: every dtype NNAPI has may cross it; and the
    blob carries per-channel quantized weights."""

    runtime_dtypes = BOUNDARY_DTYPES
    per_channel_weights = True


def lower_program(program: torch.export.ExportedProgram, options: EtOptions) -> Blob:
    """The blob of ``program`` (one whole delegated subgraph), with the constants over the
    options' threshold in ``Blob.named_data``."""
    flexible = flexible_dims(program)  # first: reading a size as an int specializes it
    bounds = dim_bounds(program, flexible)
    examples = example_inputs(program)
    captured = capture_model(program, examples, capture_mode="export")

    def make_lowerer(graph: Graph, specs: Sequence[InputSpec]) -> Lowerer:
        return ExecuTorchLowerer(graph, specs, target_level=options.target_level)

    lowered = lower_graph(captured.graph, examples, nhwc=options.nhwc,
                          flexible=flexible if bounds else None,
                          relax=options.relax,
                          target_level=options.target_level, make_lowerer=make_lowerer)
    model = lowered.cx.model
    if options.target_level is not None:
        require_level(model, lowered.cx.origins, options.target_level)
    for index, dims in lowered.cx.sym_dims.items():  # the blob's model: at the examples
        model.operands[index].dimensions = hints(dims)
    models, named = blob_models(model, options.named_threshold)
    shapes = ShapePrograms(bounds, size_patches(lowered, models)) if bounds \
        else ShapePrograms()
    settings = replace(options.settings, feature_level=int(model.feature_level))
    return Blob(settings, models, tuple(_inputs(lowered)),
                tuple(_outputs(lowered, output_dtypes(program))), named, shapes)


def dim_bounds(program: torch.export.ExportedProgram, flexible: list[tuple[int, ...]]
               ) -> tuple[DimBound, ...]:
    """The bounds of the program's dynamic input dimensions (torch.export's range
    constraints): each must be one symbol with a maximum; sizes start at 1."""
    names = program.graph_signature.user_inputs
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    bounds = []
    for i, dims in enumerate(flexible):
        shape = placeholders[names[i]].meta["val"].shape
        for d in dims:
            expr = shape[d].node.expr
            found = program.range_constraints.get(expr)
            maximum = _finite(getattr(found, "upper", None))
            if found is None or maximum is None or maximum > 2**31 - 1:
                raise _unsupported(f"input {i} dimension {d} ({expr}) has no maximum; the NNAPI"
                                   " backend takes bounded dynamic sizes: export it with"
                                   " torch.export.Dim(name, max=N)")
            bounds.append(DimBound(i, d, max(int(found.lower), 1), maximum))
    return tuple(bounds)


def _finite(bound: object) -> int | None:
    """A range bound as an int; None when it is infinite (torch.export's ``int_oo``)."""
    try:
        value: int = int(bound)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return value


def size_patches(lowered: Lowered, models: tuple[BlobModel, ...]) -> tuple[SizePatch, ...]:
    """One size program per main-model operand dimension, INT32 value and ExecuTorch output
    dimension that depends on the dynamic input dimensions."""
    cx = lowered.cx
    if len(models) > 1:
        raise _unsupported("dynamic input sizes with torch.cond or torch.while_loop; export"
                           " it with static shapes")
    patches: list[SizePatch] = []
    for target, table in ((PatchTarget.DIMENSION, cx.sym_dims),
                          (PatchTarget.VALUE, cx.sym_values)):
        for index, values in table.items():
            if target is PatchTarget.VALUE and \
                    models[0].operands[index].value.kind != ValueKind.INLINE:
                raise _unsupported(f"operand {index}'s size-dependent values are too large"
                                   " to patch in the blob")
            patches.extend(SizePatch(target, index, k, tuple(program(v)))
                           for k, v in enumerate(values) if isinstance(v, Sym))
    for j, k in enumerate(lowered.output_map):  # the ExecuTorch outputs' sizes
        if lowered.output_ranks[k] != 0:
            patches.extend(SizePatch(PatchTarget.OUTPUT, j, d, tuple(program(v)))
                           for d, v in enumerate(lowered.outputs[k].shape)
                           if isinstance(v, Sym))
    return tuple(patches)


def example_inputs(program: torch.export.ExportedProgram) -> tuple[torch.Tensor, ...]:
    """Example tensors for the program's user inputs, made from their recorded shapes and
    dtypes (preprocess gets no real inputs): small random floats, zero integers."""
    examples = []
    for name in program.graph_signature.user_inputs:
        node = next(n for n in program.graph.nodes if n.name == name)
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise _unsupported(f"input {name} is a {type(val).__name__}, not a tensor")
        shape = [_hint(d) for d in val.shape]
        if val.dtype.is_floating_point:
            examples.append(torch.rand(shape, dtype=val.dtype))
        else:
            examples.append(torch.zeros(shape, dtype=val.dtype))
    return tuple(examples)


def _hint(size: int | torch.SymInt) -> int:
    """A size's example value, without the guard ``int()`` would add on a SymInt."""
    if isinstance(size, torch.SymInt):
        return int(size.node.hint)
    return int(size)


def output_dtypes(program: torch.export.ExportedProgram) -> list[str]:
    """The dtype of each user output, as ExecuTorch allocates it."""
    output = next(n for n in program.graph.nodes if n.op == "output")
    leaves = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) \
        else [output.args[0]]
    kinds = [spec.kind.name for spec in program.graph_signature.output_specs]
    dtypes = []
    for leaf, kind in zip(leaves, kinds, strict=False):
        if kind == "USER_OUTPUT":
            val = leaf.meta.get("val") if isinstance(leaf, torch.fx.Node) else None
            dtypes.append(dtype_name(val.dtype) if isinstance(val, torch.Tensor) else "?")
    return dtypes


def _inputs(lowered: Lowered) -> list[BlobTensor]:
    model = lowered.cx.model
    result = []
    for i, (t, spec) in enumerate(zip(lowered.inputs, lowered.specs, strict=True)):
        result.append(blob_tensor(model, i, True, _scalar_type(spec.example.dtype, i),
                                  hints(t.shape), t.layout))
    return result


def _outputs(lowered: Lowered, dtypes: list[str]) -> list[BlobTensor]:
    model = lowered.cx.model
    if len(dtypes) != len(lowered.output_map):
        raise _unsupported(f"the program returns {len(dtypes)} tensors, the NNAPI model"
                           f" {len(lowered.output_map)}")
    result = []
    for i, k in enumerate(lowered.output_map):
        t = lowered.outputs[k]
        shape: tuple[int, ...]
        layout: tuple[int, ...]
        if lowered.output_ranks[k] == 0:  # a 0-D result leaves NNAPI as [1]
            shape, layout = (), ()
        else:
            shape, layout = hints(t.shape), t.layout
        tensor = blob_tensor(model, k, False, _scalar_type(dtypes[i], i), shape, layout)
        result.append(tensor)
    return result


def _scalar_type(dtype: str, index: int) -> ScalarType:
    found = SCALAR_TYPE_OF_DTYPE.get(dtype)
    if found is None:
        raise _unsupported(f"tensor {index} has dtype {dtype}, which no NNAPI operand holds")
    return found


def _unsupported(message: str) -> ConversionError:
    return ConversionError([UnsupportedUse("executorch", message, "the delegated program")])
