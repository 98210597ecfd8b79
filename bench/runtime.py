"""Host runtime speed against PyTorch, in one process, with the same thread count.

Three models, each timed on the host runtime and in eager PyTorch at every thread count asked
for (all pools set together with torch_nnapi.convert.set_num_threads):

* float MobileNetV2 at 224x224: an NNAPI model built with the Python API (NHWC, float32,
  random weights -- inverted residual blocks of expand 1x1 CONV_2D + RELU6, DEPTHWISE_CONV_2D
  3x3 + RELU6, project 1x1 CONV_2D and a residual ADD, then AVERAGE_POOL_2D and
  FULLY_CONNECTED) on the runtime, against the same network in eager PyTorch;
* quantized MobileNetV2: torchvision's quantizable MobileNetV2 (random weights, calibrated on
  random images, PyTorch's qnnpack configuration), converted with torch_nnapi.convert, its
  NNAPI model on the runtime, against the quantized model in eager PyTorch on qnnpack;
* the small transformer encoder of the test zoo (146 operations on 1x32 tokens) through the
  converted module (PyTorch's NNAPI runtime on libneuralnetworks.so), against eager PyTorch.

Runs alternate in blocks, each side after an untimed warm-up run, so that load changes on the
machine hit both alike; each figure is the median of the timed runs. Outputs are checked
against PyTorch's first. A side that runs slower on more threads than on fewer gets a warning
(thread pools contending: its ratios mean little). Exit code 0 when every ratio meets its
target, 2 when one does not.

    PYTHONPATH=src python3 bench/runtime.py [--threads 2,1] [--runs N] [--profile]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.convert import zoo  # noqa: E402
from tests.realmodels.torchvision_support import load_torchvision  # noqa: E402
from torch_nnapi.convert import convert_with_details, set_num_threads  # noqa: E402
from torch_nnapi.convert.tools.bench import CONTENTION_MARGIN  # noqa: E402
from torch_nnapi.convert.tools.host import model_for  # noqa: E402
from torch_nnapi.nnapi import FuseCode, Model, OperandType, OperationType, PaddingCode  # noqa: E402
from torch_nnapi.runtime import Compilation  # noqa: E402

BLOCK = 5  # runs of one side before switching to the other
F32 = OperandType.TENSOR_FLOAT32
I32 = OperandType.INT32
# MobileNetV2: (expansion t, output channels c, repeats n, first stride s).
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]
STEM, HEAD, CLASSES, SIZE = 32, 1280, 1000, 224


# ------------------------------------------------------------------------------ float MobileNetV2


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


# One step of the network: a kind ("conv", "dw", "block_start", "add", "fc") and its weights
# and parameters, whose types depend on the kind.
Step = tuple[Any, ...]


def layers(weights: Weights) -> list[Step]:
    """The network as a list of ("conv"|"dw"|"block_start"|"add"|"fc", ...) steps."""
    steps: list[Step] = [("conv", *weights.conv(3, STEM, 3), 2, FuseCode.RELU6)]
    cin = STEM
    for t, c, n, s in BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            residual = stride == 1 and cin == c
            hidden = cin * t
            if residual:
                steps.append(("block_start",))
            if t != 1:
                steps.append(("conv", *weights.conv(cin, hidden, 1), 1, FuseCode.RELU6))
            steps.append(("dw", *weights.depthwise(hidden), stride, FuseCode.RELU6))
            steps.append(("conv", *weights.conv(hidden, c, 1), 1, FuseCode.NONE))
            if residual:
                steps.append(("add",))
            cin = c
    steps.append(("conv", *weights.conv(cin, HEAD, 1), 1, FuseCode.RELU6))
    fc_w = (weights.rng.standard_normal((CLASSES, HEAD)) / np.sqrt(HEAD)).astype(np.float32)
    steps.append(("fc", fc_w, np.zeros(CLASSES, np.float32)))
    return steps


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
        kind = step[0]
        if kind == "block_start":
            saved.append(x)
        elif kind == "add":
            out = m.add_operand(F32, (0, 0, 0, 0))
            m.add_operation(OperationType.ADD, [saved.pop(), x, i32(FuseCode.NONE)], [out])
            x = out
        elif kind in ("conv", "dw"):
            _, w, b, stride, fuse = step
            filt = m.add_constant(F32, w)
            bias = m.add_constant(F32, b)
            out = m.add_operand(F32, (0, 0, 0, 0))
            # torch pads k // 2 on every side (explicit form); NNAPI's SAME would put the
            # odd padding of a stride-2 layer at the end only.
            pad = w.shape[1] // 2
            padding = [i32(pad)] * 4 if pad else [i32(PaddingCode.VALID)]
            args = [x, filt, bias, *padding, i32(stride), i32(stride)]
            if kind == "dw":
                args.append(i32(1))
                op = OperationType.DEPTHWISE_CONV_2D
            else:
                op = OperationType.CONV_2D
            m.add_operation(op, args + [i32(fuse)], [out])
            x = out
            size = (size + stride - 1) // stride
        elif kind == "fc":
            _, w, b = step
            pooled = m.add_operand(F32, (0, 0, 0, 0))
            m.add_operation(OperationType.AVERAGE_POOL_2D,
                            [x, i32(PaddingCode.VALID), i32(1), i32(1), i32(size), i32(size),
                             i32(FuseCode.NONE)], [pooled])
            logits = m.add_operand(F32, (1, CLASSES), name="logits")
            m.add_operation(OperationType.FULLY_CONNECTED,
                            [pooled, m.add_constant(F32, w), m.add_constant(F32, b),
                             i32(FuseCode.NONE)], [logits])
            x = logits
    m.identify_inputs_and_outputs([model_input], [x])
    return m.finish()


class _Residual(torch.nn.Module):
    def __init__(self, body: torch.nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        body: torch.Tensor = self.body(x)
        return x + body


def torch_model(steps: list[Step]) -> torch.nn.Module:
    def conv(step: Step) -> list[torch.nn.Module]:
        kind, w, b, stride, fuse = step
        k = w.shape[1]
        if kind == "dw":
            c = w.shape[3]
            layer = torch.nn.Conv2d(c, c, k, stride, k // 2, groups=c)
            layer.weight.data = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 0, 1, 2)))
        else:
            layer = torch.nn.Conv2d(w.shape[3], w.shape[0], k, stride, k // 2)
            layer.weight.data = torch.from_numpy(np.ascontiguousarray(w.transpose(0, 3, 1, 2)))
        assert layer.bias is not None
        layer.bias.data = torch.from_numpy(b)
        return [layer, torch.nn.ReLU6()] if fuse == FuseCode.RELU6 else [layer]

    stack: list[list[torch.nn.Module]] = [[]]
    for step in steps:
        if step[0] == "block_start":
            stack.append([])
        elif step[0] == "add":
            body = torch.nn.Sequential(*stack.pop())
            stack[-1].append(_Residual(body))
        elif step[0] == "fc":
            linear = torch.nn.Linear(step[1].shape[1], step[1].shape[0])
            linear.weight.data = torch.from_numpy(step[1])
            linear.bias.data = torch.from_numpy(step[2])
            stack[-1] += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), linear]
        else:
            stack[-1] += conv(step)
    return torch.nn.Sequential(*stack[0]).eval()


# ------------------------------------------------------------------------------ the three cases


@dataclass
class Case:
    """One model: the runtime side and PyTorch's, and how their outputs must agree."""

    name: str
    target: float
    ours: Callable[[], object]
    theirs: Callable[[], object]
    check: Callable[[], str]  # raises AssertionError when the outputs disagree
    compilation: Compilation | None = None  # for --profile
    profile_inputs: list[np.ndarray] | None = None


def float_mobilenet() -> Case:
    steps = layers(Weights())
    compilation = Compilation(nnapi_model(steps))
    net = torch_model(steps)
    image = np.random.default_rng(1).standard_normal((1, SIZE, SIZE, 3)).astype(np.float32)
    image_nchw = torch.from_numpy(np.ascontiguousarray(image.transpose(0, 3, 1, 2)))

    def check() -> str:
        ours = compilation.run([image]).outputs[0]
        theirs = net(image_nchw).numpy()
        largest = float(np.max(np.abs(theirs)))
        error = float(np.max(np.abs(ours - theirs))) / max(1e-6, largest)
        assert error < 1e-3, f"max error {error:.1e} of the largest logit"
        return f"max error {error:.1e} of the largest logit"

    return Case("float MobileNetV2 224x224 (runtime / eager)", 1.0,
                lambda: compilation.run([image]), lambda: net(image_nchw), check, compilation,
                [image])


def quantized_mobilenet() -> Case:
    torchvision = load_torchvision()
    torch.backends.quantized.engine = "qnnpack"
    torch.manual_seed(0)
    model = torchvision.models.quantization.mobilenet_v2(weights=None, quantize=False).eval()
    model.fuse_model(is_qat=False)
    model.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(model, inplace=True)
    for _ in range(4):
        model(torch.randn(2, 3, SIZE, SIZE))
    torch.ao.quantization.convert(model, inplace=True)
    image = torch.randn(1, 3, SIZE, SIZE)
    module = convert_with_details(model, (image,)).module
    compilation = Compilation(model_for(module, [image]))
    program = module.nnapi
    ready = [x.int_repr().numpy() if x.is_quantized else x.numpy()
             for x in program.prepare_inputs([image])]

    def check() -> str:
        ours = torch.from_numpy(compilation.run(ready).outputs[0])
        theirs = model(image)
        agree = int(ours.argmax()) == int(theirs.argmax())
        assert agree, "the top-1 classes differ"
        error = float((ours - theirs).abs().max())
        return f"same top-1 class, max difference {error:.3g}"

    return Case("quantized MobileNetV2 224x224 (runtime / qnnpack eager)", 1.5,
                lambda: compilation.run(ready), lambda: model(image), check, compilation, ready)


def transformer() -> Case:
    torch.manual_seed(0)
    model = zoo.TransformerEncoder().eval()
    tokens = torch.randint(0, 100, (1, 32))
    module = convert_with_details(model, (tokens,)).module

    def check() -> str:
        ours, theirs = module(tokens), model(tokens)
        error = float((ours - theirs).abs().max() / theirs.abs().max())
        assert error < 1e-4, f"max error {error:.1e} of the largest output"
        return f"max error {error:.1e} of the largest output"

    return Case("small transformer, 1x32 tokens (converted module / eager)", 2.0,
                lambda: module(tokens), lambda: model(tokens), check)


# ------------------------------------------------------------------------------ timing


def measure(case: Case, runs: int) -> tuple[float, float]:
    """(our median, PyTorch's median) in seconds, in alternating blocks of runs."""
    ours: list[float] = []
    theirs: list[float] = []
    for block in range(0, runs, BLOCK):
        count = min(BLOCK, runs - block)
        for fn, times in ((case.ours, ours), (case.theirs, theirs)):
            fn()  # warm-up: the other side's pools and caches are not ours
            for _ in range(count):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            time.sleep(0.02)  # the other side's threads stop spinning before it runs
    return statistics.median(ours), statistics.median(theirs)


def profile(case: Case) -> list[str]:
    if case.compilation is None or case.profile_inputs is None:
        return []
    totals: dict[str, float] = defaultdict(float)
    for timing in case.compilation.run(case.profile_inputs, profile=True).timings:
        totals[timing.operation] += timing.seconds
    return [f"    {name:<24} {seconds * 1e3:8.2f} ms"
            for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1])]


def contention_warnings(medians: dict[tuple[str, str], dict[int, float]]) -> list[str]:
    """Warnings for each side that ran slower with more threads than with its fewest (thread
    pools competing for the cores: another busy process, or spinning OpenMP workers)."""
    warnings_ = []
    for (case, side), by_threads in medians.items():
        fewest = min(by_threads)
        for threads, seconds in sorted(by_threads.items()):
            if threads > fewest and seconds > CONTENTION_MARGIN * by_threads[fewest]:
                warnings_.append(
                    f"warning: {case}: {side} ran slower on {threads} threads than on {fewest}"
                    f" ({seconds * 1e3:.2f} ms against {by_threads[fewest] * 1e3:.2f} ms):"
                    " thread pools are competing for the cores (another busy process, or"
                    " PyTorch's OpenMP threads spinning: set OMP_WAIT_POLICY=PASSIVE); ratios"
                    f" at {threads} threads mean little")
    return warnings_


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="2,1",
                        help="thread counts to measure at, comma-separated (default 2,1)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--profile", action="store_true",
                        help="also print the runtime's time per operation type")
    args = parser.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript and torch.ao.quantization
    warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor")
    # Calibrating on random images leaves an unused residual add's observer empty.
    warnings.filterwarnings("ignore", message="must run observer before calling calculate_qparams")
    missed = []
    medians: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    with torch.no_grad():
        cases = [float_mobilenet(), quantized_mobilenet(), transformer()]
        for case in cases:
            print(f"{case.name}: outputs agree ({case.check()})")
        for threads in (int(t) for t in args.threads.split(",")):
            set_num_threads(threads)
            print(f"{threads} thread{'s' if threads > 1 else ''}:")
            for case in cases:
                ours, theirs = measure(case, args.runs)
                ratio = ours / theirs
                met = ratio <= case.target
                if not met:
                    missed.append(f"{case.name} at {threads} threads")
                print(f"  {case.name}: runtime {ours * 1e3:.2f} ms, PyTorch {theirs * 1e3:.2f} ms,"
                      f" ratio {ratio:.2f} (target <= {case.target}"
                      f"{'' if met else ', missed'})")
                medians[case.name, "runtime"][threads] = ours
                medians[case.name, "PyTorch"][threads] = theirs
                if args.profile:
                    print("\n".join(profile(case)))
    for warning in contention_warnings(medians):
        print(warning)
    print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    return 0 if not missed else 2


if __name__ == "__main__":
    raise SystemExit(main())
