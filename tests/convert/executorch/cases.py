"""The models the end-to-end tests lower to .pte files, with their inputs and the outputs
ExecuTorch must reproduce (eager PyTorch, the PT2E model, or the host runtime for the NNAPI
models built directly)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
from torch import nn
from torch.utils._pytree import tree_leaves

import torch_nnapi
from torch_nnapi.convert.executorch.blob import CompileSettings, Timeouts, read_blob, write_blob
from torch_nnapi.convert.executorch.pte import to_pte
from torch_nnapi.nnapi import Model
from torch_nnapi.runtime import Compilation

from .models import if_model, per_channel_conv, plain_blob, while_model


@dataclass
class Case:
    pte: bytes
    inputs: tuple[torch.Tensor, ...]
    expected: list[torch.Tensor]
    tolerance: float  # absolute, per output: 1e-4 of the magnitude, or one quantum


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        y = nn.functional.max_pool2d(y, 2)
        y = torch.relu(self.conv2(y))
        y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return torch.softmax(self.fc(y), -1)


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class MixedDtypes(nn.Module):
    """A bool and a float input; a float and an int64 output (the casts at the boundary)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.where(mask, x, -x), x.argmax(-1)


class Twice(nn.Module):
    """One NNAPI output returned twice, and a 0-D output (NNAPI holds it as [1])."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = torch.relu(x)
        return y, y, x.sum()


class Half(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * 2.0 + 1.0)


class RegionsBothSides(nn.Module):
    """An op NNAPI lacks (cumsum; or ``middle``, for a test's fallback_ops) between two
    NNAPI regions."""

    def __init__(self, middle: str = "cumsum") -> None:
        super().__init__()
        self.first, self.second = nn.Linear(8, 16), nn.Linear(16, 4)
        self.middle = middle

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.first(x))
        y = torch.cumsum(y, -1) if self.middle == "cumsum" else torch.sigmoid(y)
        return torch.sigmoid(self.second(y))


def magnitude_tolerance(expected: list[torch.Tensor]) -> float:
    return 1e-4 * max([1.0, *(float(t.abs().max()) for t in expected if t.is_floating_point())])


def eager_case(model: nn.Module, inputs: tuple[torch.Tensor, ...], **options: object) -> Case:
    model = model.eval()
    with torch.no_grad():
        out = model(*inputs)
    expected = tree_leaves(out)  # in the order ExecuTorch returns them
    return Case(to_pte(model, inputs, **options), inputs, expected,
                magnitude_tolerance(expected))


def relaxed_case(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Case:
    """float32 that NNAPI may compute in float16 (relax_fp32_to_fp16): held to float16's
    precision (torch-nnapi's device computes float32 all the same)."""
    case = eager_case(model, inputs, relax_fp32_to_fp16=True)
    case.tolerance *= 100  # 1e-2 of the magnitude: a few float16 roundings
    return case


def quantized_case(target_level: int, per_channel: bool = False) -> Case:
    """SmallCnn quantized with PT2E (``per_channel``: its convolutions' and linear layer's
    weights per output channel), against the PT2E model within one output quantum."""
    torch.manual_seed(1)
    model = SmallCnn().eval()
    calibration = [(torch.rand(1, 3, 16, 16),) for _ in range(8)]
    quantized = torch_nnapi.quantize(model, calibration[0], calibration,
                                     target_level=target_level, per_channel=per_channel)
    x = calibration[0]
    with torch.no_grad():
        expected = [quantized(*x)]
    pte = to_pte(quantized, x, target_level=target_level)
    return Case(pte, x, expected, output_quantum(quantized) * 1.001)


def output_quantum(module: torch.fx.GraphModule) -> float:
    """The scale of the last dequantize of a PT2E model: one quantum of its output."""
    scales = [n.args[1] for n in module.graph.nodes if n.op == "call_function"
              and "dequantize_per_tensor" in str(n.target)]
    return float(scales[-1])


def nnapi_case(model: Model, inputs: list[np.ndarray], like: nn.Module,
               settings: CompileSettings | None = None, **options: object) -> Case:
    """A .pte running an NNAPI model built directly: ``like`` (same input and output
    signature) is lowered through the real pipeline, then its blob replaced by ``model``'s."""
    tensors = tuple(torch.from_numpy(x) for x in inputs)
    pte_file = deserialize_pte_binary(to_pte(like, tensors, **options))
    delegates = pte_file.program.backend_delegate_data
    assert len(delegates) == 1
    blob = plain_blob(model, settings or CompileSettings())
    like_blob = read_blob(delegates[0].data)
    for ours, theirs in ((blob.inputs, like_blob.inputs), (blob.outputs, like_blob.outputs)):
        # the delegate takes its arguments in the order its subgraph reads them
        assert [(t.dtype, t.shape) for t in ours] == [(t.dtype, t.shape) for t in theirs]
    delegates[0].data = write_blob(blob)
    pte = bytes(serialize_pte_binary(pte_file, extract_delegate_segments=True))
    expected = [torch.from_numpy(np.array(o)) for o in Compilation(model).run(inputs).outputs]
    return Case(pte, tensors, expected, magnitude_tolerance(expected))


def per_channel_case() -> Case:
    rng = np.random.default_rng(3)
    weight = rng.integers(-127, 128, (4, 3, 3, 2)).astype(np.int8)
    scales = np.array([0.01, 0.02, 0.005, 0.03], np.float32)
    bias = rng.integers(-50, 50, 4).astype(np.int32)
    model = per_channel_conv(weight, scales, bias, 0.05, 128, 0.02, 10)
    x = rng.random((1, 5, 5, 2), np.float32) * 6 - 3

    class Like(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.avg_pool2d(x.permute(0, 3, 1, 2), 3, 1).repeat(1, 2, 1, 1)\
                .permute(0, 2, 3, 1).contiguous()

    return nnapi_case(model, [x], Like())


def if_case(condition: bool) -> Case:
    class Like(nn.Module):
        def forward(self, c: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return c.to(x.dtype) * x  # reads c first: the delegate takes (c, x) in order

    return nnapi_case(if_model(3), [np.array([condition]), np.array([1, 2, 3], np.float32)],
                      Like())


def while_case() -> Case:
    class Like(nn.Module):
        def forward(self, i: torch.Tensor) -> torch.Tensor:
            return torch.neg(i)

    return nnapi_case(while_model(10, 3), [np.array([0], np.int32)], Like(),
                      CompileSettings(timeouts=Timeouts(loop_ns=10**9)), target_level=4)


class Pair(NamedTuple):
    scores: torch.Tensor
    state: torch.Tensor


class Structured(nn.Module):
    """Outputs as users write them: a dict holding a named tuple and a nested tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> dict[str, object]:
        y = self.fc(x)
        return {"pair": Pair(torch.softmax(y, -1), torch.tanh(y)),
                "nested": (y.sum(-1), (torch.relu(y), y * 2.0))}


def model_cases() -> dict[str, Callable[[], Case]]:
    """Partial delegation, structured outputs and an LSTM."""
    from ..zoo import SpeechTagger

    torch.manual_seed(0)
    return {
        "regions_both_sides": lambda: eager_case(RegionsBothSides(), (torch.randn(2, 8),)),
        "structured": lambda: eager_case(Structured(), (torch.randn(3, 6),)),
        "lstm": lambda: eager_case(SpeechTagger(), (torch.randn(1, 10, 16),)),
    }


class CausalEncoderLayer(nn.Module):
    """GPT-style through nn.TransformerEncoderLayer: a causal float mask and is_causal."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0,
                                                batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.layer(x, src_mask=causal, is_causal=True)


def transformer_cases(full: bool = False) -> dict[str, Callable[[], Case]]:
    """BERT-, GPT- and Whisper-style transformers (tests/convert/transformers.py): one layer
    over 8 tokens, or (``full``) four layers of width 64 over 32 tokens and 200 mel frames."""
    from ..transformers import Decoder, PaddedTransformer, SpeechToText, TextEncoder

    torch.manual_seed(0)
    tokens, size = (32, dict(dim=64, layers=4)) if full else (8, dict(layers=1))
    ids = torch.randint(0, 100, (2, tokens))
    padding = torch.ones(2, tokens, dtype=torch.long)
    padding[1, tokens * 2 // 3:] = 0
    mels, frames = (80, 200) if full else (16, 40)
    return {
        "bert": lambda: eager_case(TextEncoder(**size), (ids, padding)),
        "bert_padded": lambda: eager_case(PaddedTransformer(False, **size), (ids, padding)),
        "gpt_sdpa": lambda: eager_case(Decoder(**size), (ids,)),
        "gpt_padded": lambda: eager_case(PaddedTransformer(True, **size), (ids, padding)),
        "gpt_encoder_layer": lambda: eager_case(CausalEncoderLayer(size.get("dim", 32)), (
            torch.randn(2, tokens, size.get("dim", 32)),)),
        "whisper_step": lambda: eager_case(SpeechToText(mels=mels, frames=frames, **size), (
            torch.randn(1, mels, frames), torch.randint(0, 60, (1, tokens // 2)))),
    }


def cases() -> dict[str, Callable[[], Case]]:
    torch.manual_seed(0)
    image = torch.randn(1, 3, 16, 16)
    return {
        "cnn": lambda: eager_case(SmallCnn(), (image,)),
        "cnn_nchw": lambda: eager_case(SmallCnn(), (image,), nhwc=False),
        "cnn_nhwc": lambda: eager_case(SmallCnn(), (image,), nhwc=True,
                                       compilation_preference="fast_single_answer",
                                       priority="high", devices=("nnapi-reference",),
                                       execute_timeout_ns=10**10, caching=True),
        "mlp": lambda: eager_case(Mlp(), (torch.randn(4, 32),), burst=False, caching=False),
        "relaxed": lambda: relaxed_case(SmallCnn(), (image,)),
        "twice": lambda: eager_case(Twice(), (torch.randn(2, 3),)),
        "mixed_dtypes": lambda: eager_case(MixedDtypes(), (torch.randn(3, 7),
                                                           torch.rand(3, 7) > 0.5)),
        "float16": lambda: eager_case(Half(), (torch.randn(2, 8).half(),)),
        "quant_uint8": lambda: quantized_case(3),
        "quant_int8": lambda: quantized_case(4),
        "quant_per_channel_uint8": lambda: quantized_case(3, per_channel=True),
        "quant_per_channel_int8": lambda: quantized_case(4, per_channel=True),
        "per_channel": per_channel_case,
        "if_true": lambda: if_case(True),
        "if_false": lambda: if_case(False),
        "while": while_case,
        **model_cases(),
        **transformer_cases(),
    }
