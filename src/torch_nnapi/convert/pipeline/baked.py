"""Python decisions a capture bakes in, for library code known to make them on input sizes.

Tracing (and export, which specializes them) records the branch a model took for the
example inputs, not the condition. With flexible dimensions the converted model would then
silently compute another model at a size where the condition goes the other way. Where a
known library function decides on sizes, an entry here recognizes the node it decides
around (by source file, function and op kind) and adds a load-time guard that refuses such a
size with one line naming the condition.

torchvision's Swin (``shifted_window_attention``, V1 and V2) skips the cyclic shift along a
dimension whose padded size is at most the window (``if window_size[i] >= pad_H:
shift_size[i] = 0``): the guard sits on its PAD, whose amounts are ``(ws - n % ws) % ws``
(PatchMerging's pads, ``n % 2``, are not such amounts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..builder.context import Converter
from ..builder.symbolic import hint, round_up_amount, sym_min
from ..builder.values import TensorValue
from ..capture.graph import Node


@dataclass(frozen=True)
class _Decision:
    source: str  # the end of the file's path
    functions: tuple[str, ...]  # where the op is (export names the calling forward)
    kind: str  # the op the guard is derived from
    guard: Callable[[Converter, Node, list[Any], Any], None]  # (cx, node, arguments, result)


def _swin_shift(cx: Converter, node: Node, args: list[Any], result: Any) -> None:
    if not isinstance(result, TensorValue) or result.rank != 4 or len(args) < 2:
        return
    pad = list(args[1]) if isinstance(args[1], (list, tuple)) else []
    # F.pad(x, (0, 0, 0, pad_r, 0, pad_b)) of [B, H, W, C]
    for dim, position, name, padded_name in ((1, 5, "height", "pad_H"),
                                             (2, 3, "width", "pad_W")):
        if len(pad) <= position:
            continue
        rounding = round_up_amount(pad[position])
        if rounding is None:
            continue  # a fixed size (the decision cannot change), or another pad
        window = rounding[1]
        padded = result.shape[dim]
        skipped = window >= hint(padded)
        where = ("<=" if skipped else ">") + f" {window}"
        cx.guard(sym_min(padded - window, 1), 0 if skipped else 1,
                 f"torchvision's Swin shifts its windows only where the padded feature"
                 f" {name} exceeds the window size {window} (window_size >= {padded_name}: shift 0,"
                 f" at {node.location}); converted where the padded {name} is"
                 f" {hint(padded)}, the model runs only where it is {where}")


_DECISIONS = (
    _Decision("torchvision/models/swin_transformer.py", ("shifted_window_attention", "forward"),
              "aten::pad", _swin_shift),
)


def guard_decisions(cx: Converter, node: Node, args: list[Any], result: Any) -> None:
    """Adds the load-time guards of any known decision made around ``node``."""
    for decision in _DECISIONS:
        if node.kind == decision.kind \
                and any(f"({name})" in node.location for name in decision.functions) \
                and decision.source in node.location.replace("\\", "/"):
            decision.guard(cx, node, args, result)
