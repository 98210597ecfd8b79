"""How ``run`` shows and saves outputs (TorchScript modules and .pte files alike)."""

from __future__ import annotations

from ._loading import writing


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


def save_outputs(path: str, outputs: list) -> None:
    """``output_i`` arrays; a quantized output as its integers with its scale and zero
    point beside it (``output_i_scale``, ``output_i_zero_point``)."""
    import numpy as np

    arrays = {}
    for i, o in enumerate(outputs):
        if o.is_quantized:
            arrays[f"output_{i}"] = o.int_repr().numpy()
            arrays[f"output_{i}_scale"] = np.float64(o.q_scale())
            arrays[f"output_{i}_zero_point"] = np.int64(o.q_zero_point())
        else:
            arrays[f"output_{i}"] = o.detach().contiguous().numpy()
    with writing(path), open(path, "wb") as f:
        np.savez(f, **arrays)
