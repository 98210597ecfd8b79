"""Graph -> NNAPI Model with the input layouts chosen: the pipeline's entry point.

Every front-end's graph and every back-end's model meet here. :func:`lower_graph` lowers a
captured graph with each model input in PyTorch's order or channels-last, choosing for the
inputs the caller leaves open; :func:`require_level` refuses a model a device of the target
feature level would reject, naming every operation that needs more.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import torch

from ...nnapi.model import Model
from ...nnapi.signatures import SignatureMatch
from ..capture.frontend import flexible_per_input
from ..capture.graph import Graph
from ..errors import ConversionError, ConverterBug, FeatureLevelError, UnsupportedUse
from ..levels import above, model_requirements, operation_levels
from ..options import Flexible, NhwcRequest
from .lowerer import InputSpec, Lowered, Lowerer, LowererFactory, example_spec, lower


def lower_graph(graph: Graph, examples: tuple[torch.Tensor, ...], *, nhwc: NhwcRequest,
                flexible: Flexible, relax: bool = False, target_level: int | None = None,
                make_lowerer: LowererFactory | None = None) -> Lowered:
    """Lowers a captured graph, choosing the NNAPI layout of the inputs ``nhwc`` leaves
    open (None): PyTorch's order first; if the model then needs more than feature level 1,
    channels-last too, kept when its level is lower, or equal with fewer operations above
    level 1, or (a tie: a signed 8-bit model, whose every operation needs level 4) with fewer
    operations in NNAPI's NCHW layout, which drivers and the host runtime transpose around.
    NNAPI's NCHW layout flag needs level 3, while channels-last convolutions and pools need
    level 1, and the wrapper permutes the input on the host either way.
    ``target_level`` lets the default Lowerer use operations up to that feature level;
    ``make_lowerer`` replaces it (the CPU fallback's, which records per node)."""
    choices = nhwc_choices(examples, nhwc)
    flex = flexible_per_input(examples, flexible)

    def factory(graph: Graph, specs: Sequence[InputSpec]) -> Lowerer:
        if make_lowerer is not None:
            return make_lowerer(graph, specs)
        return Lowerer(graph, specs, target_level=target_level)

    def attempt(open_as: bool) -> Lowered:
        specs = [example_spec(x, open_as if c is None else c, f)
                 for x, c, f in zip(examples, choices, flex, strict=False)]
        return lower(graph, specs, relax_float32_to_float16=relax, make_lowerer=factory)

    lowered = attempt(False)
    if None in choices and lowered.cx.model.feature_level > 1:
        try:
            channels_last = attempt(True)
        except ConversionError:
            return lowered
        except ConverterBug as e:  # keep the sound conversion, but say so
            warnings.warn(f"torch-nnapi: converting channels-last failed ({e}); the model"
                          " keeps PyTorch's order", RuntimeWarning, stacklevel=3)
            return lowered
        if _level_cost(channels_last) < _level_cost(lowered):
            return channels_last
    return lowered


def _level_cost(lowered: Lowered) -> tuple[int, int, int]:
    """The model's feature level, then how many of its operations need more than level 1
    (what an older device, or one whose driver lacks the newer features, cannot run), then
    how many use the NCHW layout flag."""
    model = lowered.cx.model
    return int(model.feature_level), sum(m.level > 1 for m in model.matches), \
        sum(_in_nchw(model, operation.inputs, match)
            for operation, match in zip(model.operations, model.matches, strict=True))


def _in_nchw(model: Model, inputs: Sequence[int], match: SignatureMatch) -> bool:
    """Whether an operation's layout flag (its ``nchw`` input) is set."""
    positions = match.input_positions.get("nchw", [])
    value = model.operands[inputs[positions[0]]].value if positions else None
    return value is not None and bool(value.reshape(-1)[0])


def require_level(model: Model, origins: Mapping[int, object], target_level: int) -> None:
    """Raises FeatureLevelError if a device of ``target_level`` would reject the model."""
    if int(model.feature_level) <= target_level:
        return
    operations = above(operation_levels(model, origins), target_level)
    reasons = [r.reason for r in model_requirements(model) if r.level > target_level]
    uses = [UnsupportedUse(op.kind or op.type,
                           f"{op.type}: {'; '.join(op.reasons_above(target_level))}",
                           op.location or "an unknown place") for op in operations]
    raise FeatureLevelError(uses, target_level=target_level,
                            feature_level=int(model.feature_level), operations=operations,
                            model_reasons=reasons)


def nhwc_choices(examples: tuple[torch.Tensor, ...], nhwc: NhwcRequest) -> list[bool | None]:
    """Per input: True (channels-last), False (PyTorch's order) or None (to choose)."""
    n = len(examples)
    if nhwc is None or isinstance(nhwc, bool):  # one value for the 4-D inputs
        choices: list[bool | None] = [nhwc if x.dim() == 4 else False for x in examples]
    else:
        choices = [None if b is None else bool(b) for b in nhwc]
        if len(choices) != n:
            raise ValueError(f"nhwc has {len(choices)} entries for {n} inputs")
    result: list[bool | None] = []
    for c, x in zip(choices, examples, strict=False):
        if getattr(x, "nnapi_nhwc", False):
            c = True
        result.append(c if x.dim() == 4 or c else False)
    return result
