"""Model inputs for the commands: ``--input`` specs, random examples, and input files.

``--input`` describes one model input: ``1x3x224x224`` (a dimension written ``?224`` is
flexible: resolved at load time, 224 is the size the conversion is checked with), then
``:``-separated options: ``nhwc`` or ``nchw`` (the order NNAPI gets a 4-D input in; by
default the converter chooses), a dtype (``float32``, ``int64``, ``int32``, ``bool``), or
``quint8=SCALE,ZERO_POINT`` for a quantized input.

``--input-file`` reads real inputs: ``.npy`` (one input), ``.npz`` (its arrays in order),
``.pt`` (a tensor, or a tuple or list of them, saved with ``torch.save``), or an image
(``.png``, ``.jpg``...; needs Pillow) turned into a ``[1, 3, H, W]`` float tensor in [0, 1],
resized to the ``--input`` shape when there is one (a flexible height or width keeps the
image's own), then normalized with ``--mean`` and
``--std`` as the model's preprocessing does.

Random examples are seeded (input ``i`` with seed ``i``), so they are the same every run.
Every problem is a :class:`CliError` naming the option or file.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ._errors import CliError, ExitCode, bad_file, usage

DTYPES = ("float32", "int64", "int32", "bool", "quint8")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".ppm", ".tif", ".tiff")
_ITEM_SIZES = {"float32": 4, "int64": 8, "int32": 4, "bool": 1, "quint8": 1}


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    flexible: tuple[int, ...] = ()
    nhwc: bool | None = None  # None: the converter chooses
    dtype: str | None = None  # None: float32 for a PyTorch model, a converted one's own
    scale: float = 1.0
    zero_point: int = 0

    @property
    def dtype_or_float(self) -> str:
        return self.dtype or "float32"

    def example(self, seed: int = 0):
        """A random tensor of this shape and dtype (token ids: small non-negative ints);
        the same for the same seed."""
        import torch

        g = torch.Generator().manual_seed(seed)
        dtype = self.dtype_or_float
        if dtype in ("int64", "int32"):
            return torch.randint(0, 10, self.shape, generator=g, dtype=getattr(torch, dtype))
        if dtype == "bool":
            return torch.randint(0, 2, self.shape, generator=g).bool()
        x = torch.randn(self.shape, generator=g)
        if dtype == "quint8":
            return torch.quantize_per_tensor(x, self.scale, self.zero_point, torch.quint8)
        return x


def add_input_options(p: argparse.ArgumentParser, *, required: bool = False,
                      files: bool = True, default_help: str = "") -> None:
    """``--input`` (and, with ``files``, ``--input-file``, ``--mean``, ``--std``)."""
    p.add_argument("--input", action="append", default=[], required=required, metavar="SPEC",
                   help="an input: 1x3x224x224, ?-prefixed dims flexible, options :nhwc,"
                        " :nchw, :int64, :int32, :bool, :quint8=SCALE,ZP (repeat per input)"
                        + default_help)
    if files:
        p.add_argument("--input-file", action="append", default=[], metavar="FILE",
                       help="real inputs from a file: .npy (one input), .npz (its arrays in"
                            " order), .pt (a tensor or a tuple of tensors), or an image"
                            " (.png, .jpg...: [1, 3, H, W] in [0, 1], resized to --input,"
                            " normalized with --mean/--std); repeatable")
        p.add_argument("--mean", metavar="M[,M...]",
                       help="per-channel mean subtracted from image inputs, e.g."
                            " 0.485,0.456,0.406")
        p.add_argument("--std", metavar="S[,S...]",
                       help="per-channel standard deviation dividing image inputs, e.g."
                            " 0.229,0.224,0.225")


def parse_input(text: str) -> InputSpec:
    """``1x3x?224x?224:nhwc`` -> InputSpec; a malformed spec is a usage error."""
    shape_text, *options = text.split(":")
    dims, flexible = [], []
    for i, part in enumerate(shape_text.lower().split("x")):
        if part.startswith("?"):
            flexible.append(i)
            part = part[1:]
        if not part.isdigit() or int(part) <= 0:
            raise usage(f"--input {text!r}: dimension {i} ({part!r}) is not a positive"
                        " integer", "write the shape as 1x3x224x224")
        dims.append(int(part))
    fields: dict = dict(shape=tuple(dims), flexible=tuple(flexible))
    for option in options:
        name, _, value = option.partition("=")
        if name in ("nhwc", "nchw"):
            if len(dims) != 4:
                raise usage(f"--input {text!r}: {name} needs a 4-D shape")
            fields["nhwc"] = name == "nhwc"
        elif name in DTYPES:
            fields["dtype"] = name
            if name == "quint8":
                fields.update(_quantization(text, value))
        else:
            raise usage(f"--input {text!r}: unknown option {option!r} (nhwc, nchw,"
                        f" {', '.join(DTYPES)})")
    spec = InputSpec(**fields)
    check_size(spec.shape, spec.dtype_or_float, f"--input {text!r}")
    return spec


def _quantization(text: str, value: str) -> dict:
    try:
        scale_text, zero_point_text = value.split(",")
        scale, zero_point = float(scale_text), int(zero_point_text)
    except ValueError:
        raise usage(f"--input {text!r}: write quint8=SCALE,ZERO_POINT") from None
    if not (math.isfinite(scale) and scale > 0 and math.isfinite(float(_float32(scale)))):
        raise usage(f"--input {text!r}: the quint8 scale must be a positive finite number,"
                    f" got {scale_text}")
    if not 0 <= zero_point <= 255:
        raise usage(f"--input {text!r}: the quint8 zero point must be in [0, 255], got"
                    f" {zero_point}")
    return dict(scale=scale, zero_point=zero_point)


def _float32(value: float) -> float:
    import numpy as np

    with np.errstate(over="ignore"):
        return float(np.float32(value))


def check_size(shape: Sequence[int], dtype: str, what: str) -> None:
    """Refuses an input larger than this machine's memory before anything allocates it."""
    from ..runtime.limits import physical_memory

    size = math.prod(shape) * _ITEM_SIZES.get(dtype, 4)
    if size > physical_memory():
        raise CliError(f"{what} needs {size / 2**30:.3g} GiB, more than this machine's"
                       f" {physical_memory() / 2**30:.3g} GiB", ExitCode.OUT_OF_MEMORY,
                       "give a smaller shape")


def example_inputs(specs: Sequence[InputSpec]) -> tuple:
    """A random example of each input (input i seeded with i)."""
    return tuple(s.example(i) for i, s in enumerate(specs))


def spec_of(example) -> InputSpec:
    """The spec of a stored example tensor (a ``.pt2``'s)."""
    dtype = str(example.dtype).removeprefix("torch.")
    return InputSpec(tuple(example.shape), dtype=dtype if dtype in DTYPES else None)


def layout_options(specs: Sequence[InputSpec]) -> dict:
    """The converter's ``nhwc`` and ``flexible`` options that the inputs ask for."""
    return dict(nhwc=[s.nhwc for s in specs],
                flexible={i: list(s.flexible) for i, s in enumerate(specs) if s.flexible})


# ---------------------------------------------------------------------------- input files


def read_input_files(paths: Sequence[str], specs: Sequence[InputSpec] = (),
                     mean: str | None = None, std: str | None = None) -> list:
    """The tensors the files hold, in order. An image takes the height and width of the
    ``--input`` spec at its position when there is one; float64 becomes float32 (NNAPI has
    no float64)."""
    import torch

    tensors: list = []
    for path in paths:
        spec = specs[len(tensors)] if len(tensors) < len(specs) else None
        tensors.extend(_read_file(Path(path), spec, mean, std))
    return [t.float() if t.dtype == torch.float64 else t for t in tensors]


def _read_file(path: Path, spec: InputSpec | None, mean, std) -> list:
    if not path.is_file():
        problem = "is a directory" if path.is_dir() else "no such file"
        raise bad_file(f"--input-file {path}: {problem}")
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return [_read_image(path, spec, _channels(mean, "--mean"), _channels(std, "--std"))]
    if mean or std:
        raise usage("--mean and --std apply to image input files only")
    if suffix in (".npy", ".npz"):
        return _read_numpy(path)
    if suffix in (".pt", ".pth"):
        return _read_torch(path)
    raise bad_file(f"--input-file {path}: unknown kind of file {suffix or '(no suffix)'!r}",
                   "use .npy, .npz, .pt or an image (.png, .jpg...)")


def _read_numpy(path: Path) -> list:
    import numpy as np
    import torch

    try:
        loaded = np.load(path, allow_pickle=False)
        arrays = [loaded] if isinstance(loaded, np.ndarray) else \
            [loaded[name] for name in loaded.files]
    except Exception as e:  # noqa: BLE001 - any reading failure is the file's
        raise bad_file(f"--input-file {path}: not a readable NumPy file ({_short(e)})") \
            from None
    if not arrays:
        raise bad_file(f"--input-file {path}: holds no arrays")
    tensors = []
    for a in arrays:
        if a.dtype.kind not in "fiub":
            raise bad_file(f"--input-file {path}: an array of {a.dtype} is not a tensor")
        tensors.append(torch.from_numpy(np.ascontiguousarray(a)))
    return tensors


def _read_torch(path: Path) -> list:
    import torch

    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any reading failure is the file's
        raise bad_file(f"--input-file {path}: not a tensor file saved with torch.save"
                       f" ({_short(e)})") from None
    items = list(loaded) if isinstance(loaded, (tuple, list)) else [loaded]
    if not items or not all(isinstance(t, torch.Tensor) for t in items):
        raise bad_file(f"--input-file {path}: holds a {type(loaded).__name__}, not a tensor"
                       " or a tuple or list of tensors")
    return items


def _channels(text: str | None, option: str) -> list[float] | None:
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise usage(f"{option} {text!r}: write numbers separated by commas") from None
    if option == "--std" and any(not v > 0 for v in values):
        raise usage(f"{option} {text!r}: standard deviations must be positive")
    return values


def _read_image(path: Path, spec: InputSpec | None, mean, std):
    try:
        from PIL import Image
    except ImportError:
        raise usage(f"--input-file {path}: reading images needs Pillow",
                    "pip install pillow (torchvision brings it)") from None
    import numpy as np
    import torch

    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
            if spec is not None and len(spec.shape) == 4:
                # a flexible dimension (-1: a module converted with flexible sizes) takes
                # the image's own size
                height, width = (size if size > 0 else own for size, own in
                                 zip(spec.shape[2:], (rgb.height, rgb.width), strict=True))
                if (width, height) != rgb.size:
                    rgb = rgb.resize((width, height), Image.Resampling.BILINEAR)
            pixels = np.asarray(rgb, dtype=np.float32) / 255.0
    except Exception as e:  # noqa: BLE001 - any reading failure is the file's
        raise bad_file(f"--input-file {path}: not a readable image ({_short(e)})") from None
    x = torch.from_numpy(np.ascontiguousarray(pixels.transpose(2, 0, 1)))[None]
    for values, option in ((mean, "--mean"), (std, "--std")):
        if values is not None and len(values) not in (1, 3):
            raise usage(f"{option}: give 1 or 3 values for an RGB image, got {len(values)}")
    if mean is not None:
        x = x - torch.tensor(mean).reshape(-1, 1, 1)
    if std is not None:
        x = x / torch.tensor(std).reshape(-1, 1, 1)
    return x


def _short(error: BaseException) -> str:
    from ..convert.errors import one_line

    return one_line(error)


def conform(tensors: Sequence, specs: Sequence[InputSpec]) -> list:
    """File inputs in the dtype the ``--input`` spec at their position asks for (quint8:
    quantized with its scale and zero point)."""
    import torch

    result = []
    for i, x in enumerate(tensors):
        spec = specs[i] if i < len(specs) else None
        if spec is not None and spec.dtype == "quint8" and not x.is_quantized:
            x = torch.quantize_per_tensor(x.float(), spec.scale, spec.zero_point, torch.quint8)
        elif spec is not None and spec.dtype not in (None, "quint8"):
            x = x.to(getattr(torch, spec.dtype))
        result.append(x)
    return result


def with_dtype(spec: InputSpec, dtype: str, scale: float = 1.0,
               zero_point: int = 0) -> InputSpec:
    return replace(spec, dtype=dtype, scale=scale, zero_point=zero_point)
