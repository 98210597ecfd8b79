"""Quantized layers' parameters as graph constants.

PyTorch's quantized modules hold their weights in packed objects; a PT2E-quantized graph
holds 8-bit integers with their scales beside float ops. The PT2E fold
(``pipeline/qdq.py``) turns the latter into the former's form, with these plain objects in
place of packed ones, so that the quantized lowerings read one form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class StoredWeight:
    """8-bit weights as PT2E stores them: integers with their scale(s) and zero point(s),
    per tensor or along ``axis`` (no PyTorch quantized tensor, which torch 2.13 deprecates)."""

    values: torch.Tensor  # int8 or uint8
    scale: float | torch.Tensor
    zero_point: int | torch.Tensor
    axis: int | None = None

    def dim(self) -> int:
        return self.values.dim()

    def dequantize(self) -> torch.Tensor:
        if self.axis is None:
            return (self.values.double() - int(self.zero_point)) * float(self.scale)
        shape = [1] * self.values.dim()
        shape[self.axis] = -1
        scale = torch.as_tensor(self.scale).double().reshape(shape)
        zero_point = torch.as_tensor(self.zero_point).double().reshape(shape)
        return (self.values.double() - zero_point) * scale


@dataclass(frozen=True)
class ConvParams:
    """A quantized convolution's parameters as PyTorch's packed parameters hold them; the
    PT2E fold (``qdq.py``) hands them to quantized::conv2d in place of a packed object."""

    weight: torch.Tensor | StoredWeight  # quantized
    bias: torch.Tensor | None
    stride: list[int]
    padding: list[int] | str
    dilation: list[int]
    groups: int
    transposed: bool = False
    output_padding: tuple[int, ...] = (0, 0)


@dataclass(frozen=True)
class LinearParams:
    """A quantized linear layer's parameters (PT2E fold), in place of a packed object."""

    weight: torch.Tensor | StoredWeight  # quantized
    bias: torch.Tensor | None
