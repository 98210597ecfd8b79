"""How ``run`` shows and saves outputs (TorchScript modules and .pte files alike)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._loading import writing

# one step of an output's place: ['key'], [index] or .field
_STEP = re.compile(r"\[(?P<key>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]|\[(?P<index>\d+)\]"
                   r"|\.(?P<field>\w+)")


def named_outputs(out) -> tuple[list, list[str]]:
    """A module's return taken apart: its tensors, and each one's name (``output <n>``,
    with its place in a nested return: ``output 1 ['hidden'][0]``)."""
    from ..convert.outputs import leaves_of, structure_of

    structure = structure_of(out)
    names = [f"output {i}" + (f" {path}" if structure.nested else "")
             for i, path in enumerate(structure.paths())]
    return leaves_of(out), names


def summary(o) -> str:
    """One line: shape, dtype, the first values and, for floats, min, max and mean."""
    values = o.dequantize() if o.is_quantized else o
    flat = values.reshape(-1)
    head = ", ".join(f"{v:.4g}" if values.is_floating_point() else str(int(v))
                     for v in flat[:6].tolist())
    stats = ""
    if values.is_floating_point() and flat.numel():
        stats = (f" min {flat.min().item():.4g} max {flat.max().item():.4g}"
                 f" mean {flat.mean().item():.4g}")
    return (f"{list(o.shape)} {str(o.dtype)[6:]} [{head}{', ...' if flat.numel() > 6 else ''}]"
            f"{stats}")


def flat_name(name: str, index: int) -> str:
    """The array name of an output shown as ``name``: its place in a structured return
    (``output 1 ['hidden'][0]`` -> ``hidden.0``, ``[1].state`` -> ``output_1.state``), or
    ``output_<index>`` for a tensor or a flat tuple of them."""
    path = re.sub(r"^output \d+ ?", "", name)
    parts = []
    for step in _STEP.finditer(path):
        if step["key"] is not None:
            parts.append(step["key"][1:-1])
        elif step["index"] is not None:
            parts.append(step["index"] if parts else f"output_{step['index']}")
        else:
            parts.append(step["field"])
    return ".".join(parts).replace("/", "_") or f"output_{index}"


def save_outputs(path: str, outputs: list, names: Sequence[str] = ()) -> None:
    """One array per output, named by :func:`flat_name` (``output_i`` for a tensor or a
    flat tuple, the dict keys and tuple paths of a structured return); a quantized output
    as its integers with its scale and zero point beside it (``NAME_scale``,
    ``NAME_zero_point``)."""
    import numpy as np

    arrays = {}
    for i, o in enumerate(outputs):
        key = flat_name(names[i], i) if i < len(names) else f"output_{i}"
        if o.is_quantized:
            arrays[key] = o.int_repr().numpy()
            arrays[f"{key}_scale"] = np.float64(o.q_scale())
            arrays[f"{key}_zero_point"] = np.int64(o.q_zero_point())
        else:
            arrays[key] = o.detach().contiguous().numpy()
    with writing(path), open(path, "wb") as f:
        np.savez(f, **arrays)
