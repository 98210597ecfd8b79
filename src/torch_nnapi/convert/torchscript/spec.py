"""What one :class:`~.module.NnapiProgram` is built from: the serialized NNAPI model and how
the module feeds it, as keyword-only objects (``program.py`` makes them from a lowered
model; the module flattens them into the list attributes TorchScript code can read)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..options import CompileOptions


@dataclass(frozen=True, kw_only=True)
class ProgramInput:
    """How one model input becomes what the NNAPI model takes."""

    shape: list[int]  # PyTorch's order; -1 for a flexible dimension
    perm: list[int]  # permutation to the NNAPI order ([]: none)
    cast: int  # CAST_NONE, CAST_INT32 or CAST_QUANTIZE (module.py)
    scale: float  # quantization of the NNAPI input (CAST_QUANTIZE quantizes to it)
    zero_point: int
    dtype: torch.dtype | None  # the dtype the input must have (None: not checked)
    groups: list[int]  # runs of stored dimensions one NNAPI dimension merges ([]: none)


@dataclass(frozen=True, kw_only=True)
class ProgramOutput:
    """How one NNAPI output buffer is allocated and handed back in PyTorch's form."""

    shape: list[list[int]]  # each stored dimension as a load-time program (symbolic.py)
    perm: list[int]  # permutation back to PyTorch's order ([]: none)
    kind: int  # KIND_* (module.py): the buffer's dtype
    scale: float
    zero_point: int
    rank: int  # PyTorch's rank (0: a scalar tensor NNAPI holds as [1])
    groups: list[int]


@dataclass(frozen=True, kw_only=True)
class LoadTimeSizes:
    """Flexible sizes: the serialized words patched from the input shapes at load time, and
    the guards those shapes must pass."""

    patch_offsets: list[int]
    patch_programs: list[list[int]]
    guard_programs: list[list[int]]
    guard_values: list[int]
    guard_messages: list[str]


@dataclass(frozen=True, kw_only=True)
class ProgramSpec:
    """Everything an NnapiProgram holds."""

    serialized: torch.Tensor  # the model in PyTorch's NNAPI format, as int32 words
    weights: list[torch.Tensor]
    load_time: LoadTimeSizes
    inputs: list[ProgramInput]
    outputs: list[ProgramOutput]  # the distinct NNAPI outputs
    output_map: list[int]  # returned tensor i is NNAPI output output_map[i]
    compile: CompileOptions
    feature_level: int
    operation_origins: list[str]  # per NNAPI operation, the PyTorch code it comes from
