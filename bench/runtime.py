"""Host runtime speed: a MobileNetV2-shaped NNAPI model against the same network in torch.

Builds the network (NHWC, float32, 224x224 input, random weights) with the Python API --
inverted residual blocks of expand 1x1 CONV_2D + RELU6, DEPTHWISE_CONV_2D 3x3 + RELU6,
project 1x1 CONV_2D and a residual ADD, then AVERAGE_POOL_2D and FULLY_CONNECTED -- runs it on
torch_nnapi.runtime and the equivalent eager torch model (NCHW, the same weights), both with
2 threads, checks that the outputs agree and prints the median latencies and their ratio.

    PYTHONPATH=src python3 bench/runtime.py [--runs N] [--profile]
"""

from __future__ import annotations

import os

# BLAS and OpenMP thread pools are sized when the libraries load, so before numpy and torch.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "2"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from torch_nnapi.nnapi import FuseCode, Model, OperandType, OperationType, PaddingCode  # noqa: E402
from torch_nnapi.runtime import Compilation  # noqa: E402

THREADS = 2
TARGET_RATIO = 2.0
BLOCK = 5  # runs of one side before switching to the other
F32 = OperandType.TENSOR_FLOAT32
I32 = OperandType.INT32
# MobileNetV2: (expansion t, output channels c, repeats n, first stride s).
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]
STEM, HEAD, CLASSES, SIZE = 32, 1280, 1000, 224


class Weights:
    """Random weights in NNAPI's layouts (conv [out, h, w, in], depthwise [1, h, w, c])."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def conv(self, cin: int, cout: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        scale = np.sqrt(2.0 / (cin * k * k))
        w = (self.rng.standard_normal((cout, k, k, cin)) * scale).astype(np.float32)
        return w, (self.rng.standard_normal(cout) * 0.1).astype(np.float32)

    def depthwise(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        w = (self.rng.standard_normal((1, 3, 3, c)) * np.sqrt(2.0 / 9)).astype(np.float32)
        return w, (self.rng.standard_normal(c) * 0.1).astype(np.float32)


@dataclass(frozen=True)
class Conv:
    """A convolution in NNAPI's layout (depthwise: [1, k, k, c]), then its fused activation."""

    weights: np.ndarray
    bias: np.ndarray
    stride: int
    fuse: FuseCode
    depthwise: bool = False


@dataclass(frozen=True)
class BlockStart:
    """A residual block begins: its input is kept for the Add that ends it."""


@dataclass(frozen=True)
class Add:
    """A residual block ends: its output plus the block's input."""


@dataclass(frozen=True)
class Classifier:
    """Global average pooling, then a fully connected layer ([classes, features] weights)."""

    weights: np.ndarray
    bias: np.ndarray


Step = Conv | BlockStart | Add | Classifier


def layers(weights: Weights) -> list[Step]:
    """The network as a list of steps."""
    steps: list[Step] = [Conv(*weights.conv(3, STEM, 3), 2, FuseCode.RELU6)]
    cin = STEM
    for t, c, n, s in BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            residual = stride == 1 and cin == c
            hidden = cin * t
            if residual:
                steps.append(BlockStart())
            if t != 1:
                steps.append(Conv(*weights.conv(cin, hidden, 1), 1, FuseCode.RELU6))
            steps.append(Conv(*weights.depthwise(hidden), stride, FuseCode.RELU6,
                              depthwise=True))
            steps.append(Conv(*weights.conv(hidden, c, 1), 1, FuseCode.NONE))
            if residual:
                steps.append(Add())
            cin = c
    steps.append(Conv(*weights.conv(cin, HEAD, 1), 1, FuseCode.RELU6))
    fc_w = (weights.rng.standard_normal((CLASSES, HEAD)) / np.sqrt(HEAD)).astype(np.float32)
    steps.append(Classifier(fc_w, np.zeros(CLASSES, np.float32)))
    return steps


# ------------------------------------------------------------------------------ NNAPI model


def nnapi_model(steps: list[Step]) -> Model:
    m = Model()
    scalars: dict[int, int] = {}

    def i32(v: int) -> int:
        if v not in scalars:
            scalars[v] = m.add_scalar(I32, int(v))
        return scalars[v]

    x = m.add_operand(F32, (1, SIZE, SIZE, 3), name="image")
    model_input, size, saved = x, SIZE, []
    for step in steps:
        if isinstance(step, BlockStart):
            saved.append(x)
        elif isinstance(step, Add):
            out = m.add_operand(F32, (0, 0, 0, 0))
            m.add_operation(OperationType.ADD, [saved.pop(), x, i32(FuseCode.NONE)], [out])
            x = out
        elif isinstance(step, Conv):
            filt = m.add_constant(F32, step.weights)
            bias = m.add_constant(F32, step.bias)
            out = m.add_operand(F32, (0, 0, 0, 0))
            # torch pads k // 2 on every side (explicit form); NNAPI's SAME would put the
            # odd padding of a stride-2 layer at the end only.
            pad = step.weights.shape[1] // 2
            padding = [i32(pad)] * 4 if pad else [i32(PaddingCode.VALID)]
            args = [x, filt, bias, *padding, i32(step.stride), i32(step.stride)]
            if step.depthwise:
                args.append(i32(1))
                op = OperationType.DEPTHWISE_CONV_2D
            else:
                op = OperationType.CONV_2D
            m.add_operation(op, args + [i32(step.fuse)], [out])
            x = out
            size = (size + step.stride - 1) // step.stride
        else:
            pooled = m.add_operand(F32, (0, 0, 0, 0))
            m.add_operation(OperationType.AVERAGE_POOL_2D,
                            [x, i32(PaddingCode.VALID), i32(1), i32(1), i32(size), i32(size),
                             i32(FuseCode.NONE)], [pooled])
            logits = m.add_operand(F32, (1, CLASSES), name="logits")
            m.add_operation(OperationType.FULLY_CONNECTED,
                            [pooled, m.add_constant(F32, step.weights),
                             m.add_constant(F32, step.bias), i32(FuseCode.NONE)], [logits])
            x = logits
    m.identify_inputs_and_outputs([model_input], [x])
    return m.finish()


# ------------------------------------------------------------------------------ torch model


class _Residual(torch.nn.Module):
    def __init__(self, body: torch.nn.Module):
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual: torch.Tensor = self.body(x)
        return x + residual


def _torch_conv(step: Conv) -> list[torch.nn.Module]:
    w, k = step.weights, step.weights.shape[1]
    if step.depthwise:
        c = w.shape[3]
        layer = torch.nn.Conv2d(c, c, k, step.stride, k // 2, groups=c)
        layer.weight.data = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 0, 1, 2)))
    else:
        layer = torch.nn.Conv2d(w.shape[3], w.shape[0], k, step.stride, k // 2)
        layer.weight.data = torch.from_numpy(np.ascontiguousarray(w.transpose(0, 3, 1, 2)))
    layer.bias = torch.nn.Parameter(torch.from_numpy(step.bias))
    return [layer, torch.nn.ReLU6()] if step.fuse == FuseCode.RELU6 else [layer]


def torch_model(steps: list[Step]) -> torch.nn.Module:
    stack: list[list[torch.nn.Module]] = [[]]
    for step in steps:
        if isinstance(step, BlockStart):
            stack.append([])
        elif isinstance(step, Add):
            body = torch.nn.Sequential(*stack.pop())
            stack[-1].append(_Residual(body))
        elif isinstance(step, Classifier):
            linear = torch.nn.Linear(step.weights.shape[1], step.weights.shape[0])
            linear.weight.data = torch.from_numpy(step.weights)
            linear.bias.data = torch.from_numpy(step.bias)
            stack[-1] += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), linear]
        else:
            stack[-1] += _torch_conv(step)
    return torch.nn.Sequential(*stack[0]).eval()


# ------------------------------------------------------------------------------ timing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--profile", action="store_true",
                        help="also print the runtime's time per operation type")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)

    steps = layers(Weights())
    compilation = Compilation(nnapi_model(steps))
    net = torch_model(steps)
    image = np.random.default_rng(1).standard_normal((1, SIZE, SIZE, 3)).astype(np.float32)
    image_nchw = torch.from_numpy(np.ascontiguousarray(image.transpose(0, 3, 1, 2)))

    with torch.no_grad():
        ours = compilation.run([image]).outputs[0]
        theirs = net(image_nchw).numpy()
        error = float(np.max(np.abs(ours - theirs)) / max(1e-6, np.max(np.abs(theirs))))
        if not np.allclose(ours, theirs, rtol=1e-3, atol=1e-3 * np.max(np.abs(theirs))):
            print(f"MISMATCH: max relative error {error:.2e}")
            return 1
        for _ in range(3):
            compilation.run([image])
            net(image_nchw)
        runtime_times, torch_times = [], []
        per_op: dict[str, list[float]] = defaultdict(list)
        # Alternating blocks of runs, each after an untimed warm-up run: load changes on the
        # machine hit both alike, while each side's thread pools (which keep spinning for a
        # while after a call) and cache contents do not slow the other's timed runs.
        for block in range(0, args.runs, BLOCK):
            count = min(BLOCK, args.runs - block)
            compilation.run([image])
            for _ in range(count):
                start = time.perf_counter()
                result = compilation.run([image], profile=args.profile)
                runtime_times.append(time.perf_counter() - start)
                totals: dict[str, float] = defaultdict(float)
                for t in result.timings:
                    totals[t.operation] += t.seconds
                for name, seconds in totals.items():
                    per_op[name].append(seconds)
            time.sleep(0.05)
            net(image_nchw)
            for _ in range(count):
                start = time.perf_counter()
                net(image_nchw)
                torch_times.append(time.perf_counter() - start)
            time.sleep(0.05)

    ours_ms = statistics.median(runtime_times) * 1e3
    torch_ms = statistics.median(torch_times) * 1e3
    ratio = ours_ms / torch_ms
    print(f"outputs agree (max error {error:.1e} of the largest logit)")
    if args.profile:
        for name, values in sorted(per_op.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"  {name:<20} {statistics.median(values) * 1e3:8.2f} ms")
    print(f"runtime median {ours_ms:.2f} ms, torch median {torch_ms:.2f} ms"
          f" ({THREADS} threads), ratio runtime/torch {ratio:.2f} (target <= {TARGET_RATIO})")
    return 0 if ratio <= TARGET_RATIO else 2


if __name__ == "__main__":
    raise SystemExit(main())
