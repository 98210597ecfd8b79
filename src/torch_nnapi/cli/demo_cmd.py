"""``torch-nnapi demo``: the whole path in a few seconds, with nothing to download.

Builds a small CNN in PyTorch (a conv-bn-relu6 stem, a depthwise-separable block with a
residual addition, max and global average pooling, a linear classifier), converts it with
``torch_nnapi.convert``, runs the result through PyTorch's own NNAPI runtime
(``torch.classes._nnapi.Compilation``) on torch-nnapi's libneuralnetworks.so, compares it
with eager PyTorch, saves and reloads it, and prints what ``inspect`` would show and the
latency. Exits 0 only if every step agrees.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from ._commands import command
from ._errors import ExitCode, usage

TOLERANCE = 1e-4  # relative to the output's magnitude


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=20, help="timed runs (default: %(default)s)")


def demo_model():
    """The demo CNN, in eval mode, with batch-norm statistics that are not the identity."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
                relu6: bool = True) -> nn.Sequential:
        layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if relu6:
            layers.append(nn.ReLU6())
        return nn.Sequential(*layers)

    class DepthwiseSeparable(nn.Module):
        def __init__(self, channels: int):
            super().__init__()
            self.depthwise = conv_bn(channels, channels, 3, groups=channels)
            self.pointwise = conv_bn(channels, channels, 1, relu6=False)

        def forward(self, x):
            return x + self.pointwise(self.depthwise(x))

    class DemoNet(nn.Module):
        def __init__(self, classes: int = 10):
            super().__init__()
            self.stem = conv_bn(3, 16, 3, stride=2)
            self.block = DepthwiseSeparable(16)
            self.expand = conv_bn(16, 32, 1)
            self.pool = nn.MaxPool2d(2)
            self.classifier = nn.Linear(32, classes)

        def forward(self, x):
            x = self.pool(self.expand(self.block(self.stem(x))))
            x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return torch.softmax(self.classifier(x), dim=1)

    torch.manual_seed(0)
    model = DemoNet()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            assert m.running_mean is not None and m.running_var is not None  # tracked (default)
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model.eval()


def _relative_error(actual, expected) -> float:
    scale = max(float(expected.abs().max()), 1e-30)
    return float((actual - expected).abs().max()) / scale


@command("demo", "convert a small CNN, run it through PyTorch's NNAPI runtime on"
         " torch-nnapi's libneuralnetworks.so and compare with PyTorch (a quick start)",
         _configure, torchscript=True, runs_models=True)
def run(args: argparse.Namespace) -> int:
    import torch

    import torch_nnapi

    from ..convert.api import Conversion, convert_with_details
    from ..convert.tools.bench import first_run
    from ..convert.tools.check import loaded_nnapi_library
    from ..convert.tools.timing import quiet_pools, refusal, time_calls
    from ..runtime.threads import get_num_threads
    from .inspect_cmd import describe

    if args.runs < 1:
        raise usage("--runs must be at least 1")
    failures: list[str] = []
    model = demo_model()
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    print("torch-nnapi demo: PyTorch -> NNAPI -> PyTorch's NNAPI runtime on Linux")
    print("model: a small CNN (conv-bn-relu6 stem, depthwise-separable block with a residual"
          " add, max pool, global average pool, linear, softmax), input [1, 3, 64, 64]")

    try:
        conversion = convert_with_details(model, (x,), nhwc=True)
    except Exception as e:  # noqa: BLE001 - reported, the demo then fails
        print(f"1. torch_nnapi.convert failed: {e}")
        return int(ExitCode.CANNOT_CONVERT)
    assert isinstance(conversion, Conversion)  # partitioned only when a fallback is asked for
    module = conversion.module
    print(f"1. torch_nnapi.convert(model, x, nhwc=True): {conversion.seconds:.2f} s")
    info = describe(module)
    counts: dict[str, int] = {}
    for op in info["operations"]:
        counts[op["type"]] = counts.get(op["type"], 0) + 1
    print(f"   inspect: {len(info['operations'])} NNAPI operations, feature level"
          f" {info['feature_level']} (Android {info['android']}, API {info['api_level']}),"
          f" {info['weights_bytes'] / 1e3:.1f} kB of weights, input"
          f" {'x'.join(map(str, info['inputs'][0]['dimensions']))} (NHWC)")
    print("   operations: " + ", ".join(f"{n} {name}" for name, n in counts.items()))
    if info["feature_level"] != conversion.feature_level or \
            len(info["operations"]) != len(conversion.model.operations):
        failures.append("the saved model differs from the converted one")

    library = torch_nnapi.library_path()
    with torch.no_grad():
        expected = model(x)
        try:
            compile_seconds, first_seconds = first_run(module, (x,))
            actual = module(x)
        except Exception as e:  # noqa: BLE001 - reported, the demo then fails
            print(f"2. running through torch.classes._nnapi.Compilation failed: {e}")
            return int(ExitCode.RUN_FAILED)
    loaded = loaded_nnapi_library()
    print(f"2. ran through torch.classes._nnapi.Compilation on {loaded or 'an unknown library'}")
    if not loaded or os.path.realpath(loaded) != os.path.realpath(library):
        print(f"   (torch-nnapi's library is {library}; another libneuralnetworks.so was"
              " used: unset LIBNEURALNETWORKS_PATH / LD_LIBRARY_PATH to use ours)")
    error = _relative_error(actual, expected)
    verdict = "ok" if error <= TOLERANCE else "MISMATCH"
    print(f"   output {list(actual.shape)}: max error against eager PyTorch {error:.1e}"
          f" of its magnitude (tolerance {TOLERANCE:g}) {verdict}")
    print(f"   predicted class {int(actual.argmax())} (eager: {int(expected.argmax())})")
    if error > TOLERANCE:
        failures.append(f"the output differs from eager PyTorch by {error:.2g}")
    if int(actual.argmax()) != int(expected.argmax()):
        failures.append("the predicted class differs from eager PyTorch")

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "demo_nnapi.pt")
        torch.jit.save(module, path)  # after running: the compilation is left out
        size = os.path.getsize(path)
        reloaded = torch.jit.load(path)
        with torch.no_grad():
            again = reloaded(x)
    same = torch.equal(again, actual)
    print(f"3. saved ({size / 1e3:.1f} kB) and reloaded with torch.jit.load: outputs"
          f" {'identical' if same else 'DIFFERENT'}")
    if not same:
        failures.append("the reloaded module gives different outputs")

    runs, threads = args.runs, get_num_threads()
    with torch.no_grad():  # each side on the same threads, the other's pool quiet
        with quiet_pools(threads, torch_threads=1):
            nnapi = time_calls(lambda: module(x), runs, side="nnapi")
        with quiet_pools(threads):
            eager = time_calls(lambda: model(x), runs, side="eager")
    nnapi.threads = eager.threads = threads
    print(f"4. latency ({runs} runs on {threads} thread{'s' if threads != 1 else ''}): NNAPI"
          f" median {nnapi.median * 1e3:.2f} ms (compile {compile_seconds * 1e3:.0f} ms,"
          f" first run {first_seconds * 1e3:.1f} ms), eager PyTorch median"
          f" {eager.median * 1e3:.2f} ms")
    why = refusal({"NNAPI": nnapi, "eager": eager})
    print(f"   NNAPI / eager: no ratio: {why}" if why
          else f"   NNAPI / eager: {nnapi.median / eager.median:.2f}x")
    if failures:
        for failure in failures:
            print(f"FAIL: {failure}")
        return int(ExitCode.MISMATCH)
    print("OK: the NNAPI model agrees with PyTorch. Next: torch-nnapi check MODEL.pt --input"
          " 1x3x224x224, torch-nnapi convert, torch-nnapi bench.")
    return int(ExitCode.OK)
